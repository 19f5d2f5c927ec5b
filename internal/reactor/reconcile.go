package reactor

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kopf-go/kopf/internal/patch"
	"github.com/kopf-go/kopf/internal/posting"
)

// reconciler is the controller-runtime Reconciler of one kind: it runs the
// cycles of its objects, on the kind's state (kindState). The other roles
// are types of their own on that state: handlerRound (the change
// handlers), daemonSync (the daemons and timers), writer (the cycle's
// patches), clients, throttler (delays after errors), kindHost (the
// daemons' host); decide.go holds the decisions of a cycle.
type reconciler struct {
	*kindState
	throttler throttler
}

// Reconcile runs one processing cycle of one object: detect the cause,
// manage the finalizer, run at most one change handler, and write all of
// it back in one patch (plus one to /status where it exists).
func (r *reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	log := logr.FromContextOrDiscard(ctx)
	obj := r.newObject()
	if err := r.clients.get(ctx, req.NamespacedName, obj); err != nil {
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
	if wait := r.throttler.wait(c, now); wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	result, err := r.handle(ctx, c, now)
	return r.throttler.after(c, now, result, err)
}

// handle runs the cycle after the object has been read.
func (r *reconciler) handle(ctx context.Context, c *cycle, now time.Time) (reconcile.Result, error) {
	c.newEssence = r.settings.DiffBase.Build(c.body, r.kind.ExtraFields())
	r.settings.Progress.Clear(c.newEssence)

	// An object being moved to another replica runs nothing more here,
	// nor one that is not this replica's to work on (yet, or any more).
	switch cl := r.own.claim(c.obj, now); cl.kind {
	case handOver:
		return r.handOver(ctx, c, cl.next)
	case standBy:
		return r.standBy(c, cl.why)
	}

	// Daemons and timers follow every state of the object, consistent or
	// not: they read the latest object themselves.
	daemonSync{r.kindState}.syncDaemons(c)

	// The cache may not have this operator's last write yet; handlers must
	// not run twice on the body from before it. Wait for the watch to bring
	// it (that event triggers the next cycle), or for the timeout.
	if wait := r.consistencyWait(c, now); wait > 0 {
		c.local.V(1).Info("The object is not yet as this operator last wrote it; waiting for the cache.",
			"resourceVersion", c.obj.GetResourceVersion(), "expected", c.mem.expectedVersion)
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

// report logs a problem with the object's stored state and, the first time
// this value is seen, posts a Warning Event so that users see it too.
func (r *kindState) report(ctx context.Context, c *cycle, what, value, reason, message string) {
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
func (r *kindState) handlerContext(ctx context.Context, log logr.Logger) context.Context {
	return WithClient(posting.NewContext(logr.NewContext(ctx, log), r.settings.Poster), r.settings.Client)
}

// reconciles reports whether the kind has a controller: change handlers,
// daemons or timers. A kind with low-level handlers only has none, unless
// it is sharded: handing its objects over takes a reconcile.
func (r *kindState) reconciles() bool {
	return len(r.kind.Changing) > 0 || len(r.kind.Spawning) > 0 || r.own.reconcilesEveryKind()
}
