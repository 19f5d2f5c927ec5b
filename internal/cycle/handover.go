package cycle

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kopf-go/kopf/internal/daemons"
	"github.com/kopf-go/kopf/internal/write"
)

// handoverPolling is how often a handover (or a stand-by) held up by
// stopping daemons is looked at again: their exit asks for a reconcile
// anyway, but an abandoned daemon's may be long in coming.
const handoverPolling = 5 * time.Second

// handOver lets go of an object that the assigner moves to another member
// (docs/sharding.md, "Handover"). This worker is the object's only one, so
// no handler of it runs now; its daemons and timers are stopped the usual
// way, as for a pause, and waited for, the abandoned ones too, since they
// still run. Then the owner label and the grant move to the next member in
// one write guarded by the resourceVersion (and the uid): the
// acknowledgement, and this member's last write to the object. A conflict
// means the object changed, or that the cache lags behind: the write goes
// once more with the live version, if the object is still this
// replica's (handOverLive); a second conflict is looked at again in the
// next cycle. An object that is gone gets nothing.

// handoverConflictDelay is when a handover that met a changed object looks
// again, if no watch event comes first.
const handoverConflictDelay = 100 * time.Millisecond

func (r *Reconciler) handOver(ctx context.Context, o Object, t triaged) (reconcile.Result, error) {
	if running := r.daemons.StopAndWait(o, daemons.StopOperatorPausing); len(running) > 0 {
		o.Local.V(1).Info(fmt.Sprintf("The handover to %s waits for %s to exit.", t.Next, running))
		return reconcile.Result{RequeueAfter: handoverPolling}, nil
	}
	if t.WriteFirst {
		// The last cycle's outcomes go first: the next owner reads them.
		unwritten := o.Mem.Unwritten
		o.Mem.Unwritten = nil
		return r.commit(ctx, o, effects{Patch: unwritten})
	}
	o = r.private(o) // the writes fill the object in
	// Marked before the write: the DELETED event of the object leaving
	// the cache may come before the write's answer.
	r.markHandedOver(o.Obj.GetUID())
	ack, settle := r.own.LetGo(o.Obj, t.Next)
	err := r.writer.Acknowledge(ctx, o.Obj, ack)
	if apierrors.IsConflict(err) {
		err = r.handOverLive(ctx, o, t)
	}
	settle(err == nil)
	if errors.Is(err, errMovedMeanwhile) {
		r.handed.Delete(o.Obj.GetUID())
		o.Local.V(1).Info("The object was no longer this replica's when it was handed over; nothing was written.")
		return reconcile.Result{}, nil
	}
	if err != nil {
		r.handed.Delete(o.Obj.GetUID())
	} else {
		// The write filled the object in: its version is the handover's.
		o.Mem.HandedOverAt = o.Obj.GetResourceVersion()
	}
	if gone, ok := write.AsGone(err); ok {
		r.forgetGone(o, gone)
		return reconcile.Result{}, nil
	}
	switch {
	case apierrors.IsConflict(err):
		// The change's own watch event usually brings the next look
		// first; the delay is the fallback (Requeue alone is deprecated).
		o.Local.V(1).Info("The object changed while it was being handed over; looking again.")
		return reconcile.Result{RequeueAfter: handoverConflictDelay}, nil
	case err != nil:
		return reconcile.Result{}, err
	}
	o.Local.V(1).Info(fmt.Sprintf("Handed the object over to %s.", t.Next))
	return reconcile.Result{}, nil
}

// errMovedMeanwhile: the live object is no longer this replica's to hand
// over.
var errMovedMeanwhile = errors.New("the object moved meanwhile")

// handOverLive writes a handover whose first write met a changed object
// once more, with the object's live version, if it is still this
// replica's (its fence holds on the live metadata). The cache may lag far
// behind (its watch stalled while the member's Lease renews): the next
// cycle would see the same stale version, and the handover would never
// complete. Nothing of the handover depends on the object's body: its
// daemons have stopped, and the next owner handles whatever changed.
func (r *Reconciler) handOverLive(ctx context.Context, o Object, t triaged) error {
	if err := r.writer.Refresh(ctx, o.Obj); err != nil {
		return err
	}
	if fence := r.own.Fence(); fence != nil && fence(o.Obj) != nil {
		return errMovedMeanwhile
	}
	ack, _ := r.own.LetGo(o.Obj, t.Next)
	return r.writer.Acknowledge(ctx, o.Obj, ack)
}

// standBy runs nothing for an object that is in the cache but not this
// replica's to work on, and stops its daemons and timers if it has any
// (as for a pause: the object lives on, elsewhere). If its owner label
// was edited by hand to name this replica, it is put back, so that the
// object goes where it is granted (a conflict looks again). Nothing else
// is requeued: the change of its labels that makes it this replica's
// again, or takes it away, brings an event.
func (r *Reconciler) standBy(ctx context.Context, o Object, t triaged) (reconcile.Result, error) {
	if running := r.daemons.StopAndWait(o, daemons.StopOperatorPausing); len(running) > 0 {
		o.Local.V(1).Info(fmt.Sprintf("This replica does not work on the object (%s); waiting for %s to exit.", t.Why, running))
		return reconcile.Result{RequeueAfter: handoverPolling}, nil
	}
	o.Local.V(1).Info(fmt.Sprintf("This replica does not work on the object: %s.", t.Why))
	if !t.PutBack {
		return reconcile.Result{}, nil
	}
	o = r.private(o) // the write fills the object in
	err := r.writer.Acknowledge(ctx, o.Obj, r.own.PutBack(o.Obj))
	if _, ok := write.AsGone(err); ok {
		return reconcile.Result{}, nil
	}
	switch {
	case apierrors.IsConflict(err):
		return reconcile.Result{RequeueAfter: handoverConflictDelay}, nil
	case err != nil:
		return reconcile.Result{}, err
	}
	o.Local.V(1).Info("Put the owner label back to the member the object is granted to.")
	return reconcile.Result{}, nil
}

// markHandedOver remembers, for kinds with on-event handlers, an object
// being handed over until its DELETED event: the object leaves this
// member's cache, but it was not deleted, so those handlers do not hear
// of it. (An object without this operator's finalizer that is deleted
// for real in the instant of its handover is not heard of either.)
func (r *Reconciler) markHandedOver(uid types.UID) {
	if len(r.kind.Registered.Watching) > 0 {
		r.handed.Store(uid, struct{}{})
	}
}
