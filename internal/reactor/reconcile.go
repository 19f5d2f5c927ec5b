package reactor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kopf-go/kopf/internal/causes"
	"github.com/kopf-go/kopf/internal/daemons"
	"github.com/kopf-go/kopf/internal/diff"
	"github.com/kopf-go/kopf/internal/execution"
	"github.com/kopf-go/kopf/internal/patch"
	"github.com/kopf-go/kopf/internal/posting"
	"github.com/kopf-go/kopf/internal/registry"
)

// throttle delays the object after an unexpected error (the API server
// failing, say), as Kopf does: 1 s, 1 s, 2 s, 3 s, 5 s, ... (the last delay
// repeats), skipping events meanwhile, until a cycle succeeds again.
func (r *reconciler) throttle(c *cycle, now time.Time, result reconcile.Result, err error) (reconcile.Result, error) {
	delays := r.settings.ErrorDelays
	if err == nil {
		if c.mem.throttles > 0 {
			c.local.Info("Throttling is over. Switching back to normal operations.")
			c.mem.throttles, c.mem.throttledUntil = 0, time.Time{}
		}
		return result, nil
	}
	if len(delays) == 0 {
		return result, err // throttling is off: controller-runtime's backoff
	}
	delay := delays[min(c.mem.throttles, len(delays)-1)]
	c.mem.throttles++
	c.mem.throttledUntil = now.Add(delay)
	c.local.Error(err, fmt.Sprintf("Throttling for %s seconds due to an unexpected error: %v", execution.Seconds(delay.Round(logPrecision)), err))
	return reconcile.Result{RequeueAfter: delay}, nil
}

// reconciler processes the objects of one kind.
type reconciler struct {
	kind *registry.Kind
	gvk  schema.GroupVersionKind
	// kindLabel is the kind as the metrics name it.
	kindLabel string
	settings  Settings
	// current reads the current run's cache and writes to the API server
	// (nil while the operator is frozen); writer writes when there is no
	// run (a daemon's last result during a freeze).
	current  atomic.Pointer[client.Client]
	writer   client.Client
	memories *memories
	sup      *daemons.Supervisor
	// events carries the daemons' requests for reconciles.
	events chan event.GenericEvent
	// daemonLog is the kind's logger for daemons and timers: they outlive
	// the reconcile that spawned them, so they do not take its logger.
	daemonLog logr.Logger

	statusSubresource func(context.Context) (bool, error)
	statusMu          sync.Mutex
	statusKnown       *bool
}

// finalizerChange is what a cycle does to this operator's finalizer.
type finalizerChange int

const (
	keepFinalizer finalizerChange = iota
	addFinalizer
	removeFinalizer
)

// cycle is the state of one processing cycle of one object.
type cycle struct {
	// log is the object's logger, whose lines may be posted as Events (if
	// the operator posts log lines); local is the same, never posted, for
	// the engine's own bookkeeping lines, as in Kopf.
	log       logr.Logger
	local     logr.Logger
	obj       client.Object
	body      map[string]any
	mem       *memory
	patch     *patch.Patch
	finalizer finalizerChange
	// pending: a change handler is not finished; delay: when it is due.
	pending bool
	delay   time.Duration
	// newEssence is the object's essence now; essence is the new last
	// handled essence, if this cycle stores one.
	newEssence map[string]any
	essence    map[string]any
	// blocking are the daemons that must exit before the object may go.
	blocking []string
	polling  time.Duration
}

// Reconcile runs one processing cycle of one object: detect the cause,
// manage the finalizer, run at most one change handler, and write all of
// it back in one patch (plus one to /status where it exists).
func (r *reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	log := logr.FromContextOrDiscard(ctx)
	obj := r.newObject()
	if err := r.get(ctx, req.NamespacedName, obj); err != nil {
		if apierrors.IsNotFound(err) {
			if uid := r.memories.forget(req.NamespacedName); uid != "" {
				r.sup.Gone(uid)
			}
			log.V(1).Info("Deleted, really deleted, and we are notified.")
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("read %s %s: %w", r.gvk.Kind, req.NamespacedName, err)
	}
	body, err := r.body(obj)
	if err != nil {
		return reconcile.Result{}, err
	}
	ref := posting.Ref{GVK: r.gvk, Namespace: obj.GetNamespace(), Name: obj.GetName(), UID: obj.GetUID()}
	log = posting.Logger(log, r.settings.Poster, ref)
	c := &cycle{
		log:   log,
		local: posting.Local(log),
		obj:   obj,
		body:  body,
		mem:   r.memories.recall(obj.GetUID(), req.NamespacedName),
		patch: patch.New(),
	}
	now := r.settings.Clock.Now()
	// Events that come while the object is throttled are skipped: the
	// object is processed again when the delay is over.
	if wait := c.mem.throttledUntil.Sub(now); wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	result, err := r.handle(ctx, c, now)
	return r.throttle(c, now, result, err)
}

// handle runs the cycle after the object has been read.
func (r *reconciler) handle(ctx context.Context, c *cycle, now time.Time) (reconcile.Result, error) {
	obj, body := c.obj, c.body
	c.newEssence = r.settings.DiffBase.Build(body, r.kind.ExtraFields())
	r.settings.Progress.Clear(c.newEssence)

	// Daemons and timers follow every state of the object, consistent or
	// not: they read the latest object themselves.
	r.syncDaemons(c)

	// The cache may not have this operator's last write yet; handlers must
	// not run twice on the body from before it. Wait for the watch to bring
	// it (that event triggers the next cycle), or for the timeout.
	if wait := r.consistencyWait(c, now); wait > 0 {
		c.local.V(1).Info("The object is not yet as this operator last wrote it; waiting for the cache.",
			"resourceVersion", obj.GetResourceVersion(), "expected", c.mem.expectedVersion)
		return reconcile.Result{RequeueAfter: wait}, nil
	}

	if c.mem.unwritten != nil {
		c.local.Info("Writing the changes that the previous cycle could not write.")
		c.patch, c.mem.unwritten = c.mem.unwritten, nil
		return r.apply(ctx, c)
	}
	r.process(ctx, c, now)
	return r.apply(ctx, c)
}

// consistencyWait returns how long to wait for the cache to catch up with
// this process's last write (a cycle's, or a daemon's or timer's), zero
// when it has (or the wait is over).
func (r *reconciler) consistencyWait(c *cycle, now time.Time) time.Duration {
	if v := c.mem.daemonWrote.Swap(nil); v != nil && (c.mem.expectedVersion == "" || versionReached(*v, c.mem.expectedVersion)) {
		c.mem.expectedVersion = *v
		c.mem.consistencyDeadline = now.Add(r.settings.ConsistencyTimeout)
	}
	if c.mem.expectedVersion == "" || r.settings.ConsistencyTimeout < 0 {
		return 0
	}
	if versionReached(c.obj.GetResourceVersion(), c.mem.expectedVersion) {
		c.mem.expectedVersion = ""
		return 0
	}
	if left := c.mem.consistencyDeadline.Sub(now); left > 0 {
		return left
	}
	c.local.Info("The cache did not catch up with this operator's last write in time; proceeding with what it has.",
		"resourceVersion", c.obj.GetResourceVersion(), "expected", c.mem.expectedVersion,
		"timeout", r.settings.ConsistencyTimeout.String())
	c.mem.expectedVersion = ""
	return 0
}

// process decides the cause and runs what it calls for, filling the cycle's
// patch and finalizer decision.
func (r *reconciler) process(ctx context.Context, c *cycle, now time.Time) {
	s := r.settings
	deleting := c.obj.GetDeletionTimestamp() != nil
	finalized := slices.Contains(c.obj.GetFinalizers(), s.Finalizer)

	newEssence := c.newEssence
	oldEssence, err := s.DiffBase.Fetch(c.body)
	if err != nil {
		if !deleting {
			r.report(ctx, c, "diffbase", fmt.Sprint(err), ReasonInvalidDiffBase,
				fmt.Sprintf("The last handled configuration cannot be read, so changes cannot be told apart; no change handlers run until it is fixed or removed (removing it makes the object count as new): %v", err))
			return
		}
		oldEssence = nil // deletion does not need it
	}
	if c.mem.oversizedEssence != nil {
		oldEssence = c.mem.oversizedEssence
	}
	if oldEssence != nil {
		s.Progress.Clear(oldEssence)
	}
	d := diff.Compute(asAny(oldEssence), newEssence)
	reason, initial := causes.Detect(causes.Input{
		Deleting:    deleting,
		Finalized:   finalized,
		HasDiffBase: oldEssence != nil,
		Diff:        d,
		Initial:     c.mem.noticedByListing && !c.mem.fullyHandledOnce,
	})
	if reason == causes.Free {
		c.log.V(1).Info("Deletion, but we are done with it, and we do not care.")
		return
	}

	subject := &registry.Subject{
		Obj:         c.obj,
		Labels:      c.obj.GetLabels(),
		Annotations: c.obj.GetAnnotations(),
		Cause: &causes.Cause{Reason: reason, Body: c.body, Old: asAny(oldEssence), New: newEssence, Diff: d, Patch: c.patch,
			Memo: c.mem.memo, Indices: r.settings.Indices},
		Initial:  initial,
		Deleting: deleting,
	}
	// An object that no change handler could care about is left alone: no
	// state, no finalizer, no log lines ("stealth mode").
	visible := r.kind.Prematch(subject)
	if !visible {
		// No handler of it can retry or fail any more. (The standing is
		// read under the memories' lock: a stopping engine reads it too.)
		r.memories.stand(c.mem, execution.Standing{})
	}
	required := visible && r.kind.RequiresFinalizer(subject) || r.daemonsRequireFinalizer(c)
	switch {
	case required && !finalized && !deleting:
		c.local.V(1).Info("Adding the finalizer, thus preventing the actual deletion.")
		c.finalizer = addFinalizer
		return
	case !required && finalized:
		c.local.V(1).Info("Removing the finalizer, as there are no handlers requiring it.")
		c.finalizer = removeFinalizer
		return
	}
	// Daemons are told to stop before the deletion handlers run (as Kopf
	// does), so that polite ones exit meanwhile.
	if deleting {
		r.stopDaemons(c)
	}
	if visible {
		switch {
		case reason.HandlesChanges():
			r.processChange(ctx, c, subject, newEssence, oldEssence, now)
		case reason == causes.NoOp:
			c.log.V(1).Info("Something has changed, but we are not interested (the essence is the same).")
		}
	}
	if deleting && finalized && !c.pending && len(c.blocking) == 0 {
		c.local.V(1).Info("Removing the finalizer, thus allowing the actual deletion.")
		c.finalizer = removeFinalizer
	}
}

// report logs a problem with the object's stored state and, the first time
// this value is seen, posts a Warning Event so that users see it too.
func (r *reconciler) report(ctx context.Context, c *cycle, what, value, reason, message string) {
	c.local.Error(nil, message) // the Event below says it to users once
	if !c.mem.firstReport(what, value) || r.settings.Poster == nil || !r.settings.Poster.Allows(posting.TypeWarning) {
		return
	}
	ref := posting.Ref{GVK: r.gvk, Namespace: c.obj.GetNamespace(), Name: c.obj.GetName(), UID: c.obj.GetUID()}
	if err := r.settings.Poster.Post(ctx, ref, posting.TypeWarning, reason, message); err != nil {
		c.local.Error(err, "Failed to post an event.")
	}
}

// handlerContext is the context a handler runs in: the logger, and the
// poster for its Events.
func (r *reconciler) handlerContext(ctx context.Context, log logr.Logger) context.Context {
	return withClient(posting.NewContext(logr.NewContext(ctx, log), r.settings.Poster), r.settings.Client)
}

// setClient points the reconciler at a run's client, or at none.
func (r *reconciler) setClient(c client.Client) {
	if c == nil {
		r.current.Store(nil)
		return
	}
	r.current.Store(&c)
}

// client is the current run's client, or the plain writer between runs.
func (r *reconciler) client() client.Client {
	if c := r.current.Load(); c != nil {
		return *c
	}
	return r.writer
}

// errFrozen is what reads return while the operator is frozen.
var errFrozen = errors.New("the operator is frozen: no objects are read")

// get reads an object from the current run's cache.
func (r *reconciler) get(ctx context.Context, key types.NamespacedName, obj client.Object) error {
	c := r.current.Load()
	if c == nil {
		return errFrozen
	}
	return (*c).Get(ctx, key, obj)
}

// reconciles reports whether the kind has a controller: change handlers,
// daemons or timers. A kind with low-level handlers only has none.
func (r *reconciler) reconciles() bool {
	return len(r.kind.Changing) > 0 || len(r.kind.Spawning) > 0
}

func (r *reconciler) newObject() client.Object {
	obj := r.kind.NewObject().(client.Object)
	if u, ok := obj.(*unstructured.Unstructured); ok {
		u.SetGroupVersionKind(r.gvk)
	}
	return obj
}

// body returns the object as a JSON-like map. Unstructured objects are used
// as they are (the cache gave us our own copy); typed ones are converted,
// which serialises them as the API server does for the same Go types.
func (r *reconciler) body(obj client.Object) (map[string]any, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u.Object, nil
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("convert %s %s to a map: %w", r.gvk.Kind, client.ObjectKeyFromObject(obj), err)
	}
	m["apiVersion"], m["kind"] = r.gvk.GroupVersion().String(), r.gvk.Kind
	return m, nil
}

// hasStatus reports (and remembers) whether the kind has a status
// subresource; a failed lookup is retried on the next cycle.
func (r *reconciler) hasStatus(ctx context.Context) (bool, error) {
	r.statusMu.Lock()
	defer r.statusMu.Unlock()
	if r.statusKnown != nil {
		return *r.statusKnown, nil
	}
	has, err := r.statusSubresource(ctx)
	if err != nil {
		return false, err
	}
	r.statusKnown = &has
	return has, nil
}

// asAny keeps a nil map from becoming a non-nil interface value.
func asAny(m map[string]any) any {
	if m == nil {
		return nil
	}
	return m
}
