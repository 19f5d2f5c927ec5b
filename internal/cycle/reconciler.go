// Package cycle is one object's processing cycle: what controller-runtime's
// reconcile of one object becomes. It reads top to bottom, one step per
// file, each a function of its inputs that returns its result:
//
//	reconciler.go  Reconcile: read the object, recall its memory, hold back
//	               a throttled one, run the steps, throttle after errors
//	gather.go      gather → facts: whose the object is, the cache's lag,
//	               unwritten outcomes, the change since the last handled
//	               essence (consistency.go: the cache's lag)
//	triage.go      triage → the cycle's step and cause, pure
//	match.go       match → what the registry says of the object under
//	               the cause (the filters are the operator's code)
//	decide.go      decide → the plan of the change handlers' part, pure
//	carry.go       carry the plan out → effects: the patch, the finalizer
//	               change, what is left to do (round.go: the change
//	               handlers; handover.go: the handover and the stand-by)
//	commit.go      commit the effects → the reconcile's result
//	throttle.go    Kopf's delays after unexpected errors
//
// Collaborators come in at construction (New and its options): the
// reader of the cache, the writer, the change handlers' round, the
// daemons' sync, the ownership and the clock, so that the cycle's table
// tests put fakes there. The memory of an object between cycles is
// internal/memory's.
package cycle

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"k8s.io/utils/clock"

	"github.com/kopf-go/kopf/internal/contain"
	"github.com/kopf-go/kopf/internal/daemons"
	"github.com/kopf-go/kopf/internal/execution"
	"github.com/kopf-go/kopf/internal/jitter"
	"github.com/kopf-go/kopf/internal/memory"
	"github.com/kopf-go/kopf/internal/metrics"
	"github.com/kopf-go/kopf/internal/objects"
	"github.com/kopf-go/kopf/internal/ownership"
	"github.com/kopf-go/kopf/internal/posting"
	"github.com/kopf-go/kopf/internal/tracing"
	"github.com/kopf-go/kopf/internal/write"
	"github.com/kopf-go/kopf/pkg/diffbase"
	"github.com/kopf-go/kopf/pkg/indexing"
	"github.com/kopf-go/kopf/pkg/memo"
	"github.com/kopf-go/kopf/pkg/patch"
	"github.com/kopf-go/kopf/pkg/progress"
)

// Settings are the cycle's part of the engine's settings, resolved.
type Settings struct {
	// Finalizer is the operator's finalizer.
	Finalizer string
	// KeepNames: every object carries the finalizer, whatever its
	// handlers need, so that an object deleted and created anew under its
	// name cannot exist while this replica still works on its
	// predecessor. A ring member's objects move between replicas, and the
	// next incarnation may be placed elsewhere (docs/sharding.md, "One
	// object, one name").
	KeepNames bool
	// ConsistencyTimeout bounds the wait for the cache to show this
	// process's last write; negative: no wait.
	ConsistencyTimeout time.Duration
	// ErrorDelays are the delays after unexpected errors in a row; empty:
	// no throttling (controller-runtime's backoff applies).
	ErrorDelays []time.Duration
	// Progress and DiffBase are the kind's storages.
	Progress progress.Storage
	DiffBase diffbase.Storage
	// Indices are the operator's, which handlers' causes carry.
	Indices *indexing.Indices
	Clock   clock.PassiveClock
	// Defaults are the change handlers' execution defaults.
	Defaults execution.Defaults
}

// Reader reads the kind's objects from the current run's cache.
type Reader interface {
	Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error
}

// Writer writes what a cycle decided (internal/write's Writer).
type Writer interface {
	// Commit writes the cycle's patch and finalizer change; conflict: the
	// finalizer's write conflicted and was left out.
	Commit(ctx context.Context, log logr.Logger, obj client.Object, p *patch.Patch, fin write.Finalizer) (conflict bool, err error)
	// Acknowledge writes a handover's acknowledgement, guarded by the
	// object's resourceVersion.
	Acknowledge(ctx context.Context, obj client.Object, ack map[string]any) error
	// Refresh reads the object's live metadata into obj (a *GoneError if
	// another object has its name now, or none).
	Refresh(ctx context.Context, obj client.Object) error
}

// Handlers run one round of the change handlers of a cause (Round).
type Handlers interface {
	Run(ctx context.Context, in RoundInput) RoundResult
}

// Daemons keep an object's daemons and timers in line with it.
type Daemons interface {
	// Sync spawns those that match the object, stops the others; essence
	// is the object's essence now (idle timers restart when it changes).
	Sync(o Object, essence map[string]any)
	// Stop stops those of a deleted object, and says which still keep it.
	Stop(o Object) daemons.Blocking
	// StopAndWait stops them all for the reason, and names those that
	// still run.
	StopAndWait(o Object, reason daemons.StopReason) []string
	// RequireFinalizer: one that matches needs the finalizer.
	RequireFinalizer(o Object) bool
}

// Object is the object as one cycle sees it.
type Object struct {
	// Obj and Body are the object as read. Until the cycle takes its own
	// copy (private), they may share their maps with the cache: read
	// them, never modify them, nor hand them to the operator's code.
	Obj  client.Object
	Body map[string]any
	// shared: Obj and Body are (or share maps with) the cache's object.
	shared bool
	// Log is the object's logger, whose lines may be posted as Events (if
	// the operator posts log lines); Local is the same, never posted, for
	// the engine's own bookkeeping lines, as in Kopf.
	Log, Local logr.Logger
	// Mem is the object's memory, which this cycle owns while it runs.
	Mem *memory.Object
	// Patch is the cycle's patch, which the handlers and filters fill.
	Patch *patch.Patch
}

// private makes o's object and body the cycle's own, if they are the
// cache's: before the operator's code gets them (a filter that calls a
// function, a handler), which may keep or modify what it gets, and before
// a write, which fills the object in with the API server's answer. The
// cycle's storages, its essences and its own checks only read them.
func (r *Reconciler) private(o Object) Object {
	if !o.shared {
		return o
	}
	o.Obj, o.Body = r.kind.Copy(o.Obj, o.Body)
	o.shared = false
	return o
}

// Reconciler is controller-runtime's Reconciler of one kind: each
// reconcile is one cycle of one object.
type Reconciler struct {
	kind     objects.Kind
	label    string
	s        Settings
	reader   Reader
	writer   Writer
	memories *memory.Store
	handlers Handlers
	daemons  Daemons
	own      ownership.Ownership
	poster   *posting.Poster
	// status tells whether the kind has /status (conditions.go); nil: it
	// has.
	status *write.StatusProbe
	// gone is told the uid of an object that is gone (its daemons stop).
	gone     func(types.UID)
	throttle throttler
	// tracer starts the cycles' spans (off: none).
	tracer tracing.Tracer
	// handed are the uids of objects handed over whose DELETED event (the
	// object leaving the cache) is still to come, for on-event handlers.
	handed sync.Map
}

// Option sets a collaborator of the Reconciler.
type Option func(*Reconciler)

// WithMemories keeps the kind's memories in m (those of a reconciler
// that this one replaces); else the reconciler makes its own.
func WithMemories(m *memory.Store) Option { return func(r *Reconciler) { r.memories = m } }

// WithHandlers runs the change handlers with h; else with a Round of
// the kind's handlers and nothing more.
func WithHandlers(h Handlers) Option { return func(r *Reconciler) { r.handlers = h } }

// WithDaemons keeps the objects' daemons in line through d; else the kind
// has none.
func WithDaemons(d Daemons) Option { return func(r *Reconciler) { r.daemons = d } }

// WithOwnership shares the objects with other replicas as o says; else
// every object is this replica's (ownership.Unshared).
func WithOwnership(o ownership.Ownership) Option { return func(r *Reconciler) { r.own = o } }

// WithPoster posts the objects' log lines and Warning Events through p,
// as the operator's settings say; else none is posted.
func WithPoster(p *posting.Poster) Option { return func(r *Reconciler) { r.poster = p } }

// WithGone tells f of an object that is gone, so that its daemons stop.
func WithGone(f func(types.UID)) Option { return func(r *Reconciler) { r.gone = f } }

// WithJitter spreads the throttling's delays by j (else by none).
func WithJitter(j jitter.Jitter) Option { return func(r *Reconciler) { r.throttle.jitter = j } }

// WithLabel names the kind in the metrics (metrics.Kind of the GVK else).
func WithLabel(label string) Option { return func(r *Reconciler) { r.label = label } }

// WithTracer gives each cycle a span of t (else none).
func WithTracer(t tracing.Tracer) Option { return func(r *Reconciler) { r.tracer = t } }

// New is the reconciler of one kind's objects, read through reader and
// written through writer.
func New(kind objects.Kind, s Settings, reader Reader, writer Writer, opts ...Option) *Reconciler {
	r := &Reconciler{kind: kind, label: metrics.Kind(kind.GVK), s: s, reader: reader, writer: writer, own: ownership.Unshared{},
		daemons: noDaemons{}, gone: func(types.UID) {}, throttle: throttler{delays: s.ErrorDelays}}
	for _, opt := range opts {
		opt(r)
	}
	if r.memories == nil {
		r.memories = memory.NewStore(&memo.Memo{}, nil, nil, r.gone)
	}
	if r.handlers == nil {
		r.handlers = &Round{Kind: kind.Registered, Progress: s.Progress, Clock: s.Clock, Defaults: s.Defaults}
	}
	return r
}

// Memories are the kind's memories.
func (r *Reconciler) Memories() *memory.Store { return r.memories }

// Reconcile runs one processing cycle of one object: at most one change
// handler, and one patch, plus one to /status where the kind has it.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	log := logr.FromContextOrDiscard(ctx)
	obj := r.kind.New()
	// Read without a copy: most cycles only read the object (a takeover
	// starts tens of thousands of them at once, and a copy was up to a
	// fifth of such a cycle's CPU). The cycle takes its own copy (private)
	// before the operator's code or a write may modify it.
	if err := r.reader.Get(ctx, req.NamespacedName, obj, client.UnsafeDisableDeepCopy); err != nil {
		if apierrors.IsNotFound(err) {
			if uid := r.memories.Forget(req.NamespacedName); uid != "" {
				r.gone(uid)
			}
			log.V(1).Info("Deleted, really deleted, and we are notified.")
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("read %s %s: %w", r.kind.GVK.Kind, req.NamespacedName, err)
	}
	if _, ok := obj.(*unstructured.Unstructured); !ok {
		// A typed object read without a copy is a shallow copy of the
		// cache's, whose kind the cache does not fill in; an unstructured
		// one has its kind in its map, which is the cache's.
		obj.GetObjectKind().SetGroupVersionKind(r.kind.GVK)
	}
	body, err := r.kind.Body(obj)
	if err != nil {
		return reconcile.Result{}, err
	}
	ref := posting.Ref{GVK: r.kind.GVK, Namespace: obj.GetNamespace(), Name: obj.GetName(), UID: obj.GetUID()}
	log = posting.Logger(log, r.poster, ref)
	o := Object{Obj: obj, Body: body, Log: log, Local: posting.Local(log),
		Mem: r.memories.Recall(obj.GetUID(), req.NamespacedName), Patch: patch.New(), shared: true}
	if o.Mem.Gone {
		// Its DELETED event (or the next object's) is still to come.
		o.Local.V(1).Info("The object is gone; the cache does not show it yet.")
		return reconcile.Result{}, nil
	}
	now := r.s.Clock.Now()
	if wait := o.Mem.ThrottledUntil.Sub(now); wait > 0 {
		// Events meanwhile are skipped; the object comes back then.
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	result, err := r.traced(ctx, o, now)
	return r.throttle.after(o, now, result, err)
}

// traced runs the cycle within its span, which its handlers' attempts and
// its API requests join (docs/tracing.md).
func (r *Reconciler) traced(ctx context.Context, o Object, now time.Time) (result reconcile.Result, err error) {
	ctx, span := r.tracer.Cycle(ctx, r.kind.GVK, o.Obj.GetNamespace(), o.Obj.GetName(), string(o.Obj.GetUID()))
	defer func() { span.End(err) }()
	return r.contained(ctx, o, now)
}

// contained runs the cycle's steps; a storage's panic ends the cycle there
// (the engine guards the storages so), as an error that throttles the
// object, and the stack goes into the log. Other panics are not the
// operator's callbacks': they go on to controller-runtime, which recovers
// and counts them.
func (r *Reconciler) contained(ctx context.Context, o Object, now time.Time) (result reconcile.Result, err error) {
	var ended error
	defer func() {
		if ended == nil {
			return
		}
		result, err = reconcile.Result{}, ended
		var p *contain.Panic
		if errors.As(ended, &p) {
			o.Local.Error(ended, fmt.Sprintf("The cycle has ended: %v", ended), "stack", string(p.Stack))
		}
	}()
	defer contain.Unwound(&ended)
	return r.run(ctx, o, now)
}

// run takes the cycle's steps in order, from the object as read to when
// it comes back.
func (r *Reconciler) run(ctx context.Context, o Object, now time.Time) (reconcile.Result, error) {
	f := r.gather(o, now)
	t := triage(f)
	tracing.Cause(ctx, string(t.Reason))
	if r.kind.Registered.FiltersRunCode() {
		// The daemons' filters and the change handlers' get the object.
		o = r.private(o)
	}
	if t.syncsDaemons() {
		// Daemons and timers follow every state of the object that is
		// this replica's, consistent or not: they read the latest object
		// themselves.
		r.daemons.Sync(o, f.NewEssence)
	}
	switch t.Step {
	case stepHandOver:
		return r.handOver(ctx, o, t)
	case stepStandBy:
		return r.standBy(ctx, o, t)
	case stepWaitForCache:
		// The watch event of the awaited write usually starts the next
		// cycle before the wait is over.
		o.Local.V(1).Info("The object is not yet as this operator last wrote it; waiting for the cache.",
			"resourceVersion", o.Obj.GetResourceVersion(), "expected", o.Mem.ExpectedVersion)
		return reconcile.Result{RequeueAfter: t.Wait}, nil
	case stepWriteUnwritten:
		o.Local.Info("Writing the changes that the previous cycle could not write.")
		o = r.private(o) // the conditions' rebase may take the object's own
		unwritten := o.Mem.Unwritten
		o.Mem.Unwritten = nil
		r.rebaseConditions(o, unwritten)
		return r.commit(ctx, o, effects{Patch: unwritten})
	case stepReportDiffBase:
		r.report(ctx, o, "diffbase", fmt.Sprint(f.DiffBaseErr), ReasonInvalidDiffBase,
			fmt.Sprintf("The last handled configuration cannot be read, so changes cannot be told apart; no change handlers run until it is fixed or removed (removing it makes the object count as new): %v", f.DiffBaseErr))
		return r.commit(ctx, o, effects{Patch: o.Patch})
	case stepFree:
		o.Log.V(1).Info("Deletion, but we are done with it, and we do not care.")
		return r.commit(ctx, o, effects{Patch: o.Patch})
	}
	m := r.match(o, f, t)
	pl := decide(f, t, m.matches)
	return r.commit(ctx, o, r.carryOut(ctx, o, f, pl, m.subject, now))
}

// noDaemons are those of a kind without daemons and timers.
type noDaemons struct{}

func (noDaemons) Sync(Object, map[string]any)                     {}
func (noDaemons) Stop(Object) daemons.Blocking                    { return daemons.Blocking{} }
func (noDaemons) StopAndWait(Object, daemons.StopReason) []string { return nil }
func (noDaemons) RequireFinalizer(Object) bool                    { return false }

// WasHandedOver reports (once) whether a DELETED event is an object that
// this member handed over rather than one that was deleted.
func (r *Reconciler) WasHandedOver(uid types.UID) bool {
	_, ok := r.handed.LoadAndDelete(uid)
	return ok
}
