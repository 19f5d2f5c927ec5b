package reactor

import (
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/kopf-go/kopf/pkg/freeze"
	"github.com/kopf-go/kopf/pkg/registry"
)

// Names of the health checks and the metric.
const (
	ReadyzCheckName = "kopf-peering"
	FrozenMetric    = "kopf_operator_frozen"
)

// addHealth adds a readiness check that fails until the startup handlers
// have finished and while the operator is frozen (saying why), but passes
// on a standby replica that waits for leadership, a liveness
// check that runs the probe handlers (a freeze does not fail it: a restart
// would not help), and the operator to the frozen-state metric.
func addHealth(mgr manager.Manager, e *engine, identity string, reg *registry.Registry, s Settings) (*Prober, error) {
	ready := func(*http.Request) error { return readiness(mgr.Elected(), e.started.Load, e.toggle) }
	if err := mgr.AddReadyzCheck(ReadyzCheckName, ready); err != nil {
		return nil, fmt.Errorf("add the readiness check: %w", err)
	}
	prober := NewProber(reg, s, mgr.GetLogger().WithName("probes"))
	if err := mgr.AddHealthzCheck(ReadyzCheckName, prober.Check); err != nil {
		return nil, fmt.Errorf("add the liveness check: %w", err)
	}
	frozenStates.add(identity, e.toggle)
	return prober, nil
}

// readiness is the readiness check's verdict. A replica that is not (yet)
// the leader runs no engine and is ready: it stands by, as controller-runtime's
// own checks have it, and a Deployment's rolling update can bring a new
// replica up while the old one still holds the Lease. (Without leader
// election, elected is closed from the start.)
func readiness(elected <-chan struct{}, started func() bool, toggle *freeze.Toggle) error {
	select {
	case <-elected:
	default:
		return nil
	}
	if !started() {
		return errors.New("the startup handlers have not finished")
	}
	if frozen, reason := toggle.Frozen(); frozen {
		return fmt.Errorf("frozen: %s", reason)
	}
	return nil
}

// frozenCollector reports, for every engine of the process, whether it is
// frozen (1) or running (0), with the reason as a label.
type frozenCollector struct {
	desc    *prometheus.Desc
	mu      sync.Mutex
	toggles map[string]*freeze.Toggle
	once    sync.Once
}

var frozenStates = &frozenCollector{
	desc: prometheus.NewDesc(FrozenMetric, "Whether the kopf-go operator is frozen in favour of a peer (1) or running (0).",
		[]string{"identity", "reason"}, nil),
	toggles: map[string]*freeze.Toggle{},
}

func (c *frozenCollector) add(identity string, toggle *freeze.Toggle) {
	// The collector is the process's one; registering it cannot fail but
	// for being registered already.
	c.once.Do(func() { _ = metrics.Registry.Register(c) })
	c.mu.Lock()
	defer c.mu.Unlock()
	c.toggles[identity] = toggle
}

func (c *frozenCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *frozenCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for identity, toggle := range c.toggles {
		value := 0.0
		frozen, reason := toggle.Frozen()
		if frozen {
			value = 1
		}
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, value, identity, reason)
	}
}
