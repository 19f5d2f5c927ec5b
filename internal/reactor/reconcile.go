package reactor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kopf-go/kopf/internal/contain"
	"github.com/kopf-go/kopf/internal/posting"
	"github.com/kopf-go/kopf/pkg/patch"
)

// reconciler is the controller-runtime Reconciler of one kind: a thin
// adapter from a request to the kind's pipeline (pipeline.go). It reads
// the object, forgets one that is gone, holds back one that is throttled
// after errors, and turns the cycle's outcome into the queue's next step.
type reconciler struct {
	*kindState
	cycles    *pipeline
	throttler throttler
}

// Reconcile runs one processing cycle of one object: gather its facts,
// decide, and carry the plan out (at most one change handler, and one
// patch, plus one to /status where the kind has it).
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
	if c.mem.gone {
		// Its DELETED event (or the next object's) is still to come.
		c.local.V(1).Info("The object is gone; the cache does not show it yet.")
		return reconcile.Result{}, nil
	}
	now := r.settings.Clock.Now()
	if wait := r.throttler.wait(c, now); wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	result, err := r.runCycle(ctx, c, now)
	return r.throttler.after(c, now, result, err)
}

// runCycle runs the pipeline; a storage's panic ends the cycle there
// (storages.go), as an error that throttles the object, and the stack
// goes into the log. Other panics are not the operator's callbacks': they
// go on to controller-runtime, which recovers and counts them.
func (r *reconciler) runCycle(ctx context.Context, c *cycle, now time.Time) (result reconcile.Result, err error) {
	defer func() {
		var sp *storagePanic
		if errors.As(err, &sp) {
			c.local.Error(err, fmt.Sprintf("The cycle has ended: %v", err), "stack", string(sp.p.Stack))
		}
	}()
	defer contain.Unwound(&err)
	return r.cycles.run(ctx, c, now)
}
