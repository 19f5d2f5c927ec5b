package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/internal/daemons"
	"github.com/kopf-go/kopf/internal/execution"
	"github.com/kopf-go/kopf/internal/peering"
	"github.com/kopf-go/kopf/internal/posting"
	"github.com/kopf-go/kopf/internal/ring/share"
	"github.com/kopf-go/kopf/internal/tracing"
	"github.com/kopf-go/kopf/pkg/diffbase"
	"github.com/kopf-go/kopf/pkg/indexing"
	"github.com/kopf-go/kopf/pkg/memo"
	"github.com/kopf-go/kopf/pkg/progress"
)

// Settings are the engine's knobs; zero values mean Kopf's defaults.
// Resolved fills them in, once: Setup and RunActivities take resolved
// settings only, and each component takes its own part of them as it is
// (as controller-runtime's controllers take config.Controller).
type Settings struct {
	// Finalizer is the finalizer that blocks deletion while delete
	// handlers are pending.
	Finalizer string
	// Progress stores per-handler progress records.
	Progress progress.Storage
	// DiffBase stores the last handled essence.
	DiffBase diffbase.Storage
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
	// Daemons are the supervisor's part: the stop's grace (the cleanup
	// handlers' too) and report interval, and DefaultBackoff, the retry
	// delay after arbitrary errors, which change handlers use too. The
	// engine adds what only it knows (its logger, the daemons' base
	// context, the metrics' observer); Clock is the engine's.
	Daemons daemons.Settings
	// Namespaces to serve; none: the whole cluster.
	Namespaces []string
	// Peering: mode, name, priority, lifetime, identity (the ring's
	// membership names the replica by it too).
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
	// last repeats); nil: Kopf's; empty: no throttling. Resolved copies
	// them, so that no two engines share one slice.
	ErrorDelays []time.Duration
	// Posting are the gates of Events (and whether log lines are posted).
	Posting posting.Settings
	// Client is what handlers find in their context (ClientFrom): the
	// manager's client, set by Setup.
	Client client.Client
	// Reader is what handlers find in their context as the uncached reader
	// (clients.ReaderFrom): the manager's API reader, set by Setup.
	Reader client.Reader
	// Ready, if set, is closed once the startup handlers have finished:
	// for a program that embeds the operator and waits for it.
	Ready chan struct{}
	// Sharding, if its Ring is set, makes the replica a member of a ring
	// that shares the objects (docs/sharding.md).
	Sharding share.Sharding
	// Tracer starts the spans of cycles, handlers and their API requests
	// (docs/tracing.md); the zero Tracer: none.
	Tracer tracing.Tracer
	// WatchGate, if set, is waited for before a kind is watched: it
	// returns once the kind may be watched (the API server converts it
	// through the operator's webhook: docs/conversion.md, "First
	// start"), or when ctx is done.
	WatchGate func(ctx context.Context, gvk schema.GroupVersionKind)

	// resolved: Resolved has filled the defaults.
	resolved bool
}

// DefaultFinalizer is the finalizer that blocks deletion while delete
// handlers are pending: Kopf's, so that either can take over the other's
// objects.
const DefaultFinalizer = "kopf.zalando.org/KopfFinalizerMarker"

// Defaults of Settings, equal to Kopf's where Kopf has one. Those of the
// components' parts are the components' own (daemons.Default*,
// peering.Default*, ring.Default*): one definition each.
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

// Resolved fills the zero fields: it is the one function that fills the
// engine's defaults (as controller-runtime's setOptionsDefaults is the
// manager's), and those of the components' parts through their own
// Resolved, so that what the engine, its daemons, peering and the ring
// use is what is filled here; it checks what it fills (the ring's
// durations nest). It is idempotent.
func (s Settings) Resolved() (Settings, error) {
	s.Finalizer = cmp.Or(s.Finalizer, DefaultFinalizer)
	s.ConsistencyTimeout = cmp.Or(s.ConsistencyTimeout, defaultConsistencyTimeout)
	s.MaxConcurrentReconciles = cmp.Or(s.MaxConcurrentReconciles, defaultMaxConcurrentReconciles)
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
	s.Daemons.Clock, s.Peering.Clock = s.Clock, s.Clock
	s.Daemons.Indices = s.Indices
	s.Daemons = s.Daemons.Resolved()
	s.Peering = s.Peering.Resolved()
	if s.Sharding.Ring != "" {
		var err error
		if s.Sharding.Durations, err = s.Sharding.Durations.Resolved(); err != nil {
			return s, fmt.Errorf("shard ring %q: %w", s.Sharding.Ring, err)
		}
	}
	s.resolved = true
	return s, nil
}

// errUnresolved is a programming error: settings must go through Resolved
// before the engine takes them.
var errUnresolved = errors.New("the engine's settings are not resolved (Settings.Resolved)")

// defaults returns the execution defaults for change handlers.
func (s Settings) defaults() execution.Defaults {
	return execution.Defaults{Errors: execution.ErrorsTemporary, Backoff: s.Daemons.DefaultBackoff}
}
