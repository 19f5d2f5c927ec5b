package handlers

import (
	"time"

	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/kopf-go/kopf/pkg/diffbase"
	"github.com/kopf-go/kopf/pkg/progress"
	"github.com/kopf-go/kopf/pkg/reactor"
)

// Options configure the engine. The zero value is Kopf's defaults, so a Go
// operator reads and writes the same state as a Python Kopf operator.
type Options struct {
	// Finalizer blocks deletion while delete handlers are pending.
	// Default: "kopf.zalando.org/KopfFinalizerMarker".
	Finalizer string
	// ProgressStorage keeps per-handler progress. Default: annotations
	// under "kopf.zalando.org/", reading Kopf's legacy status records too
	// (progress.NewSmart()).
	ProgressStorage progress.Storage
	// DiffBaseStorage keeps the last handled essence. Default: the
	// annotation "kopf.zalando.org/last-handled-configuration"
	// (diffbase.NewAnnotations()).
	DiffBaseStorage diffbase.Storage
	// DefaultBackoff is the retry delay after arbitrary errors. Default 60 s.
	DefaultBackoff time.Duration
	// ConsistencyTimeout bounds the wait for the cache to show this
	// operator's own last write before change handlers run again. Default
	// 5 s; negative disables the wait.
	ConsistencyTimeout time.Duration
	// MaxConcurrentReconciles is how many objects of one kind are handled
	// at once. Default 16.
	MaxConcurrentReconciles int
	// ShutdownGrace is how long the operator's stop waits for daemons,
	// timers and handlers before it gives up on them, saying which. Default
	// 20 s; keep it below the manager's GracefulShutdownTimeout (30 s by
	// default), which the standalone runner sets accordingly.
	ShutdownGrace time.Duration
	// ReportInterval is how often the stopping operator logs what it still
	// waits for. Default 5 s.
	ReportInterval time.Duration
	// Clock replaces the real clock, for tests.
	Clock clock.WithTicker
}

func (o Options) settings() reactor.Settings {
	return reactor.Settings{
		Finalizer:               o.Finalizer,
		Progress:                o.ProgressStorage,
		DiffBase:                o.DiffBaseStorage,
		DefaultBackoff:          o.DefaultBackoff,
		ConsistencyTimeout:      o.ConsistencyTimeout,
		MaxConcurrentReconciles: o.MaxConcurrentReconciles,
		Clock:                   o.Clock,
		ShutdownGrace:           o.ShutdownGrace,
		ReportInterval:          o.ReportInterval,
	}
}

// SetupWithManager adds the engine to a manager: one controller per
// registered kind, beside whatever else the manager runs. Registration
// problems (duplicate ids, contradictory filters, unknown kinds) are
// reported here, all at once.
func SetupWithManager(mgr manager.Manager, reg *Registry, opts Options) error {
	return reactor.Setup(mgr, &reg.reg, opts.settings())
}
