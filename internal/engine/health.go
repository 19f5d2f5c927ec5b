package engine

import (
	"errors"
	"fmt"
	"net/http"

	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/kopf-go/kopf/internal/activities"
	"github.com/kopf-go/kopf/internal/freeze"
	"github.com/kopf-go/kopf/internal/metrics"
	"github.com/kopf-go/kopf/internal/registry"
)

// Names of the health checks and the metric.
const (
	ReadyzCheckName = "kopf-peering"
	FrozenMetric    = metrics.OperatorFrozen
)

// addHealth adds a readiness check that fails until the startup handlers
// have finished and while the operator is frozen (saying why), but passes
// on a standby replica that waits for leadership, a liveness
// check that runs the probe handlers (a freeze does not fail it: a restart
// would not help). (The frozen-state metric is operatorMetrics'.)
func addHealth(mgr manager.Manager, e *engine, reg *registry.Registry, s Settings) (*activities.Prober, error) {
	ready := func(*http.Request) error { return readiness(mgr.Elected(), e.started.Load, e.toggle, e.own.Lost()) }
	if err := mgr.AddReadyzCheck(ReadyzCheckName, ready); err != nil {
		return nil, fmt.Errorf("add the readiness check: %w", err)
	}
	prober := activities.NewProber(reg, s.activities(), mgr.GetLogger().WithName("probes"))
	if err := mgr.AddHealthzCheck(ReadyzCheckName, prober.Check); err != nil {
		return nil, fmt.Errorf("add the liveness check: %w", err)
	}
	// The prober owns its rounds' goroutines: the manager stops it.
	if err := mgr.Add(prober); err != nil {
		return nil, fmt.Errorf("add the probes: %w", err)
	}
	return prober, nil
}

// readiness is the readiness check's verdict. A replica that is not (yet)
// the leader runs no engine and is ready: it stands by, as controller-runtime's
// own checks have it, and a Deployment's rolling update can bring a new
// replica up while the old one still holds the Lease. (Without leader
// election, elected is closed from the start.) A ring member that lost its
// membership is not ready: it handles nothing any more.
func readiness(elected <-chan struct{}, started func() bool, toggle *freeze.Toggle, lost <-chan struct{}) error {
	select {
	case <-lost:
		return errors.New("this replica lost its ring membership and handles no objects")
	default:
	}
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
