package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// FrozenState is an operator's frozen state: frozen or not, and why.
type FrozenState interface {
	Frozen() (bool, string)
}

// frozenCollector reports, for every operator of the process, whether it
// is frozen (1) or running (0), with the reason as a label. It reads the
// states when scraped, so the value is never stale.
type frozenCollector struct {
	desc   *prometheus.Desc
	mu     sync.Mutex
	states map[string]FrozenState
}

var frozen = &frozenCollector{
	desc: prometheus.NewDesc(OperatorFrozen, "Whether the kopf-go operator is frozen in favour of a peer (1) or running (0).",
		[]string{LabelIdentity, LabelReason}, nil),
	states: map[string]FrozenState{},
}

// WatchFrozen reports the operator's frozen state under its identity until
// the returned unwatch is called, which the operator does when it stops:
// the collector holds only running operators, so that the series of stopped
// ones do not pile up in a process that runs many (tests). An operator of
// the same identity that comes later replaces the entry; unwatching the
// earlier one then leaves the later one be.
func WatchFrozen(identity string, state FrozenState) (unwatch func()) {
	frozen.mu.Lock()
	defer frozen.mu.Unlock()
	frozen.states[identity] = state
	return func() {
		frozen.mu.Lock()
		defer frozen.mu.Unlock()
		if frozen.states[identity] == state {
			delete(frozen.states, identity)
		}
	}
}

func (c *frozenCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *frozenCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for identity, state := range c.states {
		value := 0.0
		isFrozen, reason := state.Frozen()
		if isFrozen {
			value = 1
		}
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, value, identity, reason)
	}
}
