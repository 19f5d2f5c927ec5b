package reactor

import (
	"cmp"
	"slices"
	"time"

	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/internal/daemons"
	"github.com/kopf-go/kopf/internal/diffbase"
	"github.com/kopf-go/kopf/internal/execution"
	"github.com/kopf-go/kopf/internal/indexing"
	"github.com/kopf-go/kopf/internal/memo"
	"github.com/kopf-go/kopf/internal/peering"
	"github.com/kopf-go/kopf/internal/posting"
	"github.com/kopf-go/kopf/internal/progress"
)

// Settings are the engine's knobs; zero values mean Kopf's defaults, which
// WithDefaults fills in (and only it).
type Settings struct {
	// Finalizer is the finalizer that blocks deletion while delete
	// handlers are pending.
	Finalizer string
	// Progress stores per-handler progress records.
	Progress progress.Storage
	// DiffBase stores the last handled essence.
	DiffBase diffbase.Storage
	// DefaultBackoff is the retry delay after arbitrary errors.
	DefaultBackoff time.Duration
	// ConsistencyTimeout bounds the wait for the cache to catch up with
	// this operator's own writes; negative disables the wait.
	ConsistencyTimeout time.Duration
	// MaxConcurrentReconciles is how many objects of a kind are processed
	// at once.
	MaxConcurrentReconciles int
	// Clock is the source of time, replaceable in tests.
	Clock clock.WithTicker
	// Poster posts Events about problems users should see; nil: none.
	Poster *posting.Poster
	// ShutdownGrace and ReportInterval: see daemons.Settings (whose
	// defaults WithDefaults fills in here, for the stop and the cleanup
	// handlers alike).
	ShutdownGrace  time.Duration
	ReportInterval time.Duration
	// Namespaces to serve; none: the whole cluster.
	Namespaces []string
	// Peering: mode, name, priority, lifetime, identity.
	Peering peering.Settings
	// WrapClient, if set, wraps the clients the engine reads and writes
	// with (instrumentation, or fault injection in tests). Patches pass
	// *metav1.PartialObjectMetadata objects.
	WrapClient func(client.Client) client.Client
	// Memo is the operator's memo; objects' memos start as copies of it.
	Memo *memo.Memo
	// Indices are the operator's indices, filled by index handlers.
	Indices *indexing.Indices
	// ErrorDelays are the delays after unexpected errors in a row (the
	// last repeats); nil: Kopf's; empty: no throttling. WithDefaults copies
	// them, so that no two engines share one slice.
	ErrorDelays []time.Duration
	// Posting are the gates of Events (and whether log lines are posted).
	Posting posting.Settings
	// Client is what handlers find in their context (ClientFrom): the
	// manager's client, set by Setup.
	Client client.Client
	// Ready, if set, is closed once the startup handlers have finished:
	// for a program that embeds the operator and waits for it.
	Ready chan struct{}
	// Sharding, if its Ring is set, makes the replica a member of a ring
	// that shares the objects (docs/sharding.md).
	Sharding Sharding
}

// DefaultFinalizer is the finalizer that blocks deletion while delete
// handlers are pending: Kopf's, so that either can take over the other's
// objects.
const DefaultFinalizer = "kopf.zalando.org/KopfFinalizerMarker"

// Defaults of Settings, equal to Kopf's where Kopf has one. The retry
// delay after arbitrary errors, the stop's grace and its report interval
// are the supervisor's (daemons.Default*): one definition for both.
const (
	defaultConsistencyTimeout      = 5 * time.Second
	defaultMaxConcurrentReconciles = 16
)

// defaultErrorDelays are Kopf's queueing.error_delays, afresh on every
// call: a slice shared by all settings could be changed through any.
func defaultErrorDelays() []time.Duration {
	return []time.Duration{1 * time.Second, 1 * time.Second, 2 * time.Second, 3 * time.Second,
		5 * time.Second, 8 * time.Second, 13 * time.Second, 21 * time.Second, 34 * time.Second, 55 * time.Second,
		89 * time.Second, 144 * time.Second, 233 * time.Second, 377 * time.Second, 610 * time.Second}
}

// enqueueBuffer is how many reconcile requests of daemons may wait for the
// controller to take them.
const enqueueBuffer = 1024

// Reasons of the Warning Events about an object's stored state.
const (
	ReasonInvalidProgress  = "InvalidProgress"
	ReasonInvalidDiffBase  = "InvalidLastHandledConfiguration"
	ReasonDiffBaseTooLarge = "LastHandledConfigurationTooLarge"
)

// WithDefaults fills the zero fields: it is the one place of the engine's
// defaults (as controller-runtime's setOptionsDefaults is the manager's),
// the supervisor's included, so that what the engine and its daemons use
// is what is filled here. It is idempotent.
func (s Settings) WithDefaults() Settings {
	s.Finalizer = cmp.Or(s.Finalizer, DefaultFinalizer)
	s.DefaultBackoff = cmp.Or(s.DefaultBackoff, daemons.DefaultBackoff)
	s.ConsistencyTimeout = cmp.Or(s.ConsistencyTimeout, defaultConsistencyTimeout)
	s.MaxConcurrentReconciles = cmp.Or(s.MaxConcurrentReconciles, defaultMaxConcurrentReconciles)
	s.ShutdownGrace = cmp.Or(s.ShutdownGrace, daemons.DefaultShutdownGrace)
	s.ReportInterval = cmp.Or(s.ReportInterval, daemons.DefaultReportInterval)
	if s.Progress == nil {
		s.Progress = progress.NewSmart()
	}
	if s.DiffBase == nil {
		s.DiffBase = diffbase.NewAnnotations()
	}
	if s.Clock == nil {
		s.Clock = clock.RealClock{}
	}
	if s.Memo == nil {
		s.Memo = &memo.Memo{}
	}
	if s.Indices == nil {
		s.Indices = &indexing.Indices{}
	}
	if s.ErrorDelays == nil {
		s.ErrorDelays = defaultErrorDelays()
	} else {
		s.ErrorDelays = slices.Clone(s.ErrorDelays) // empty stays empty: no throttling
	}
	return s
}

// defaults returns the execution defaults for change handlers.
func (s Settings) defaults() execution.Defaults {
	return execution.Defaults{Errors: execution.ErrorsTemporary, Backoff: s.DefaultBackoff}
}
