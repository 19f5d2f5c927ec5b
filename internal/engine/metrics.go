package engine

import (
	"context"
	"time"

	"github.com/kopf-go/kopf/internal/daemons"
	"github.com/kopf-go/kopf/internal/execution"
	"github.com/kopf-go/kopf/internal/freeze"
	"github.com/kopf-go/kopf/internal/metrics"
)

// daemonMetrics is the supervisor's observer: it counts daemons and
// timers, and their calls as handler invocations with the cause "daemon"
// or "timer".
type daemonMetrics struct{}

var _ daemons.Observer = daemonMetrics{}

// kindOf is the kind label of a host.
func kindOf(host daemons.Host) string {
	if host == nil {
		return ""
	}
	return host.Label()
}

func (daemonMetrics) Spawned(host daemons.Host, h *daemons.Handler) {
	metrics.DaemonSpawned(kindOf(host), h.ID)
}

func (daemonMetrics) Stopping(host daemons.Host, h *daemons.Handler) {
	metrics.DaemonStopping(kindOf(host), h.ID)
}

func (daemonMetrics) Attempted(host daemons.Host, h *daemons.Handler, o execution.Outcome, took time.Duration) {
	cause, callback := metrics.CauseDaemon, metrics.CallbackDaemon
	if h.Kind == daemons.KindTimer {
		cause, callback = metrics.CauseTimer, metrics.CallbackTimer
	}
	metrics.Invoked(kindOf(host), h.ID, cause, string(execution.Classify(o)), took, !o.NotCalled)
	countPanic(kindOf(host), callback, h.ID, o)
}

// DelayPanicked counts a panic of the initial delay's function.
func (daemonMetrics) DelayPanicked(host daemons.Host, h *daemons.Handler) {
	metrics.CallbackPanicked(kindOf(host), metrics.CallbackDelay, h.ID)
}

// Exited counts the exit under its stop reason; one that was not asked to
// stop is DONE, as Kopf names a daemon that ended on its own.
func (daemonMetrics) Exited(host daemons.Host, h *daemons.Handler, reason daemons.StopReason) {
	label := reason
	if label == 0 {
		label = daemons.StopDone
	}
	metrics.DaemonExited(kindOf(host), h.ID, label.String(), reason != 0)
}

// operatorMetrics keeps the operator in the metrics while its manager
// runs: its frozen state is reported from the start, and when the manager
// stops, the state goes, and its kinds' objects leave the gauges, so that
// another operator in the same process (as in tests) starts from zero and
// stopped ones do not pile up. Daemons and timers leave the gauges
// themselves as they exit. It runs on every replica.
type operatorMetrics struct {
	kinds    func() []*kindState
	identity string
	toggle   *freeze.Toggle
	// ring is the replica's ring, if it is a member of one.
	ring string
}

func (m *operatorMetrics) NeedLeaderElection() bool { return false }

func (m *operatorMetrics) Start(ctx context.Context) error {
	unwatch := metrics.WatchFrozen(m.identity, m.toggle)
	<-ctx.Done()
	for _, r := range m.kinds() {
		r.memories.Release()
	}
	if m.ring != "" {
		metrics.ForgetShard(m.ring)
	}
	unwatch()
	return nil
}
