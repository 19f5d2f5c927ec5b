package reactor

import (
	"cmp"
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kopf-go/kopf/internal/daemons"
)

// handoverPolling is how often a handover held up by stopping daemons is
// looked at again, at the most: their exit asks for a reconcile anyway.
const handoverPolling = 5 * time.Second

// handOver lets go of an object that the assigner moves to another member
// (docs/sharding.md, "Handover"). This worker is the object's only one, so
// no handler of it runs now; its daemons and timers are stopped the usual
// way, as for a pause, and waited for, the abandoned ones too, since they
// still run. Then the owner label moves to the next member in one write
// guarded by the resourceVersion: the acknowledgement, and this member's
// last write to the object. A conflict means the object changed: the
// next cycle looks at it again.
func (r *reconciler) handOver(ctx context.Context, c *cycle, next string) (reconcile.Result, error) {
	b := r.sup.Stop(c.obj.GetUID(), daemons.StopOperatorPausing)
	if running := append(b.Names, b.Abandoned...); len(running) > 0 {
		c.local.V(1).Info(fmt.Sprintf("The handover to %s waits for %s to exit.", next, running))
		return reconcile.Result{RequeueAfter: min(cmp.Or(b.Polling, handoverPolling), handoverPolling)}, nil
	}
	if c.mem.unwritten != nil {
		// The last cycle's outcomes go first: the next owner reads them.
		c.patch, c.mem.unwritten = c.mem.unwritten, nil
		return r.apply(ctx, c)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.writer.timeout)
	defer cancel()
	// Marked before the write: the DELETED event of the object leaving
	// the cache may come before the write's answer.
	r.markHandedOver(c.obj.GetUID())
	err := r.writer.send(ctx, c.obj, r.shard.acknowledgement(c.obj, next), false)
	if err != nil {
		r.shard.handed.Delete(c.obj.GetUID())
	}
	switch {
	case apierrors.IsConflict(err):
		c.local.V(1).Info("The object changed while it was being handed over; looking again.")
		return reconcile.Result{Requeue: true}, nil
	case apierrors.IsNotFound(err):
		return reconcile.Result{}, nil
	case err != nil:
		return reconcile.Result{}, err
	}
	r.shard.released.Add(1)
	c.local.V(1).Info(fmt.Sprintf("Handed the object over to %s.", next))
	return reconcile.Result{}, nil
}

// markHandedOver remembers, for kinds with on-event handlers, an object
// being handed over until its DELETED event: the object leaves this
// member's cache, but it was not deleted, so those handlers do not hear
// of it. (An object without this operator's finalizer that is deleted
// for real in the instant of its handover is not heard of either.)
func (r *reconciler) markHandedOver(uid types.UID) {
	if len(r.kind.Watching) > 0 {
		r.shard.handed.Store(uid, struct{}{})
	}
}
