package handlers

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/trace"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/kopf-go/kopf/internal/clients"
	"github.com/kopf-go/kopf/internal/conversion"
	"github.com/kopf-go/kopf/internal/daemons"
	"github.com/kopf-go/kopf/internal/engine"
	"github.com/kopf-go/kopf/internal/peering"
	"github.com/kopf-go/kopf/internal/ring"
	"github.com/kopf-go/kopf/internal/ring/share"
	"github.com/kopf-go/kopf/internal/tracing"
	"github.com/kopf-go/kopf/pkg/diffbase"
	"github.com/kopf-go/kopf/pkg/events"
	"github.com/kopf-go/kopf/pkg/memo"
	"github.com/kopf-go/kopf/pkg/progress"
)

// Options configure the engine, wherever it runs: in a manager of the
// program's (SetupWithManager) or in the standalone runner's (Main, Run,
// whose RunOptions add the settings of the manager it makes). The zero
// value is Kopf's defaults, so a Go operator reads and writes the same
// state as a Python Kopf operator.
type Options struct {
	// Finalizer blocks deletion while delete handlers are pending.
	// Default: "kopf.zalando.org/KopfFinalizerMarker".
	Finalizer string
	// ProgressStorage keeps per-handler progress (Kopf's
	// settings.persistence.progress_storage; pkg/progress). Default:
	// annotations under "kopf.zalando.org/", reading Kopf's legacy status
	// records too (progress.NewSmart()).
	ProgressStorage progress.Storage
	// DiffBaseStorage keeps the last handled essence (Kopf's
	// settings.persistence.diffbase_storage; pkg/diffbase). Default: the
	// annotation "kopf.zalando.org/last-handled-configuration"
	// (diffbase.NewAnnotations()).
	DiffBaseStorage diffbase.Storage
	// DefaultBackoff is the retry delay after arbitrary errors. Default 60 s.
	DefaultBackoff time.Duration
	// ConsistencyTimeout bounds the wait for the cache to show this
	// operator's own last write before change handlers run again. Zero
	// means the default, 5 s; NoConsistencyWait disables the wait (which
	// Kopf's consistency_timeout = 0 does: a zero here does not).
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
	// Namespaces to serve; none: the whole cluster.
	Namespaces []string
	// Standalone takes no part in peering (Kopf's --standalone).
	Standalone bool
	// Peering names the peering object and makes peering mandatory: the
	// operator stays frozen until that object exists (Kopf's --peering).
	// Without it, the object "default" is used if the peering CRDs exist.
	Peering string
	// Priority among peers: a live peer of higher priority freezes this
	// operator; one of the same priority freezes both.
	Priority int
	// PeeringLifetime is how long this operator's peer record is valid
	// without renewal. Default 60 s.
	PeeringLifetime time.Duration
	// Identity names this operator among its peers. Default: $POD_ID, or
	// user@host/time/random.
	Identity string
	// Clock replaces the real clock, for tests.
	Clock clock.WithTicker
	// WrapClient, if set, wraps the clients the engine reads and writes
	// with: for instrumentation, or to inject failures in tests. The
	// engine's patches pass *metav1.PartialObjectMetadata objects: only the
	// metadata of the patched object comes back.
	WrapClient func(client.Client) client.Client
	// Memo is the operator's memo: startup handlers may fill it, and every
	// object's memo starts as a (shallow) copy of it.
	Memo *memo.Memo
	// Posting are the gates of Events (events.Settings: Disabled, Level,
	// and Loggers to post handler log lines as Events, off by default).
	Posting events.Settings
	// Webhooks configure the serving of validating and mutating handlers,
	// if there are any: SetupWithManager serves them on the manager's
	// webhook server (the zero value serves them at its root, unmanaged).
	Webhooks WebhookOptions
	// ErrorDelays are how long an object waits after unexpected errors in
	// a row (API failures): default Kopf's 1, 1, 2, 3, 5, 8, ... 610 s (the
	// last repeats); an empty, non-nil list leaves it to controller-runtime.
	ErrorDelays []time.Duration
	// Ready, if set, is closed once the operator is ready: its startup
	// handlers have finished and it begins to watch (Kopf's ready_flag).
	// A program that embeds the operator waits on it before its own work.
	// The channel is closed once: an engine needs a fresh one each run.
	Ready chan struct{}
	// Sharding shares the objects of every registered kind among the
	// replicas of a ring, each handling its own share (docs/sharding.md).
	// The zero value: no sharding, one replica handles all objects.
	Sharding Sharding
	// TracerProvider, if set, traces the operator (docs/tracing.md): a
	// span for each object's cycle, each handler's attempt, each daemon's
	// and timer's run and each webhook review, and client spans for the
	// API requests made within them, the handlers' own through Client
	// included. Nil: no spans, at no cost. The standalone runner sets it
	// from the OTEL_EXPORTER_OTLP_* environment.
	TracerProvider trace.TracerProvider
}

// Sharding makes the operator a member of a ring of replicas that share
// its objects. The replica's name in the ring comes from Identity (the
// peering identity), which must differ between replicas: the default
// ($POD_ID, else user@host/time/random) does.
type Sharding struct {
	// Ring names the ring: one per operator deployment (a DNS label of
	// at most 40 characters). Empty: no sharding. The runner's
	// --shard-ring sets it.
	Ring string
	// Namespace holds the ring's Leases. Default: the namespace the
	// replica runs in ($POD_NAMESPACE, else its service account's), else
	// the one namespace it serves, else "default".
	Namespace string
	// LeaseDuration is how long the others count a member live after its
	// last renewal (default 15 s); RenewDeadline is how long a member goes
	// on without renewing before it stops handling objects (default 10 s);
	// RenewPeriod is how often it renews (default 5 s). They must nest:
	// period < deadline < duration.
	LeaseDuration, RenewDeadline, RenewPeriod time.Duration
	// AssignerWorkers is how many objects the ring's assigner writes at
	// once when it gives objects owners or asks for handovers (default
	// 16).
	AssignerWorkers int
	// Lost, if set, is closed when the replica loses its ring membership
	// (see ErrShardMembershipLost): every handler and daemon has been
	// cancelled then. A program that embeds the operator exits on it at
	// once, rather than after its manager's graceful shutdown, which
	// waits for handlers that ignore their cancellation
	// (docs/embedding.md). The standalone runner does so by itself.
	Lost chan struct{}
	// NoStandby keeps each member from watching, before anyone dies, the
	// objects it would adopt if their owner died: a member then holds its
	// share alone, not about twice as many objects, and a takeover lists
	// the dead member's objects before it starts them (docs/sharding.md,
	// "Standing by"). The runner's --shard-no-standby sets it.
	NoStandby bool
}

func (o Options) settings() engine.Settings {
	return engine.Settings{
		Finalizer:               o.Finalizer,
		Progress:                o.ProgressStorage,
		DiffBase:                o.DiffBaseStorage,
		ConsistencyTimeout:      o.ConsistencyTimeout,
		MaxConcurrentReconciles: o.MaxConcurrentReconciles,
		Clock:                   o.Clock,
		Daemons:                 daemons.Settings{ShutdownGrace: o.ShutdownGrace, ReportInterval: o.ReportInterval, DefaultBackoff: o.DefaultBackoff},
		Namespaces:              o.Namespaces,
		Peering:                 o.peering(),
		WrapClient:              o.WrapClient,
		Memo:                    o.Memo,
		ErrorDelays:             o.ErrorDelays,
		Posting:                 o.Posting,
		Ready:                   o.Ready,
		Tracer:                  tracing.New(o.TracerProvider),
		Sharding: share.Sharding{Ring: o.Sharding.Ring, Namespace: o.Sharding.Namespace,
			Durations:       ring.Durations{LeaseDuration: o.Sharding.LeaseDuration, RenewDeadline: o.Sharding.RenewDeadline, RenewPeriod: o.Sharding.RenewPeriod},
			AssignerWorkers: o.Sharding.AssignerWorkers, Lost: o.Sharding.Lost, NoStandby: o.Sharding.NoStandby},
	}
}

func (o Options) peering() peering.Settings {
	s := peering.Settings{Mode: peering.ModeAuto, Priority: o.Priority,
		Lifetime: o.PeeringLifetime, Identity: o.Identity}
	switch {
	case o.Standalone:
		s.Mode = peering.ModeStandalone
	case o.Peering != "":
		s.Mode, s.Name = peering.ModeMandatory, o.Peering
	}
	return s
}

// SetupWithManager adds the engine to a manager: one controller per
// registered kind, beside whatever else the manager runs. Registration
// problems (duplicate ids, contradictory filters, unknown kinds) are
// reported here, all at once.
func SetupWithManager(mgr manager.Manager, reg *Registry, opts Options) error {
	s, err := opts.settings().Resolved()
	if err != nil {
		return err
	}
	_, err = setup(mgr, reg, opts, s)
	return err
}

// setup is SetupWithManager that also returns what the runner needs: the
// prober of the probe handlers, for its liveness endpoint, and the signal
// of a lost ring membership, on which it exits.
func setup(mgr manager.Manager, reg *Registry, opts Options, s engine.Settings) (*engine.Installed, error) {
	// Before anything is added to the manager: a refused registry leaves
	// no controllers behind.
	if err := reg.checkResources(mgr.GetScheme()); err != nil {
		return nil, err
	}
	// The diff-bases of kinds with converters compare across versions.
	convs, err := reg.conversionRegistry(mgr.GetScheme())
	if err != nil {
		return nil, err
	}
	var served *conversion.Served
	if convs != nil {
		s.DiffBase = conversion.NewDiffBase(s.DiffBase, convs)
		served = &conversion.Served{}
		gate, err := conversionGate(mgr, convs, opts.Webhooks, served)
		if err != nil {
			return nil, err
		}
		if gate != nil {
			s.WatchGate = gate.Wait
		}
	}
	s.Sharding.Placer = &reg.placer
	installed, err := engine.Setup(mgr, &reg.reg, s)
	if err != nil {
		return nil, err
	}
	return installed, setupWebhooks(mgr, reg, opts.Webhooks, s.Tracer, served)
}

// NoConsistencyWait, as Options.ConsistencyTimeout, lets change handlers
// run on whatever the cache has, without waiting for the operator's own
// last write to show (Kopf's consistency_timeout = 0).
const NoConsistencyWait time.Duration = -1

// Client returns the operator's client in a handler (of any kind: change,
// daemon, timer, on-event, index, activity): the manager's client, which
// writes to the API server and reads through the manager's cache. Outside
// handlers (and in login handlers, which run before there is a manager),
// it is nil.
//
// A read through it starts an informer for the kind read, if there is none
// yet: a cluster-wide list and watch (which needs list and watch
// permissions on the kind), whose objects stay in memory for as long as
// the operator runs. For kinds read now and then, read with APIReader.
func Client(ctx context.Context) client.Client { return clients.From(ctx) }

// APIReader returns the operator's uncached reader in a handler (of any
// kind, as Client): the manager's API reader (manager.GetAPIReader), whose
// every Get and List is a request to the API server. It starts no
// informer and keeps nothing in memory, and needs only get or list
// permission on what it reads. Outside handlers, it is nil.
func APIReader(ctx context.Context) client.Reader { return clients.ReaderFrom(ctx) }
