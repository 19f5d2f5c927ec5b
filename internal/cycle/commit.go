package cycle

import (
	"context"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kopf-go/kopf/internal/execution"
	"github.com/kopf-go/kopf/internal/write"
)

// annotationsSizeLimit is the API server's limit on all annotations of one
// object together (keys and values).
const annotationsSizeLimit = 256 * 1024

// commit writes the cycle's effects (the patch and the finalizer
// change), remembers the written resourceVersion for the consistency
// wait, and tells when to come back (requeueAfter): a due or sleeping
// handler is requeued after its delay, unless the write itself brings a
// watch event that starts the next cycle.
func (r *Reconciler) commit(ctx context.Context, o Object, eff effects) (reconcile.Result, error) {
	r.keepOversizedEssence(ctx, o, eff)
	if !eff.Patch.IsEmpty() || eff.Finalizer != write.KeepFinalizer {
		o = r.private(o) // the write fills the object in
	}
	before := o.Obj.GetResourceVersion()
	conflict, err := r.writer.Commit(ctx, o.Local, o.Obj, eff.Patch, eff.Finalizer)
	if gone, ok := write.AsGone(err); ok {
		r.forgetGone(o, gone)
		return reconcile.Result{}, nil
	}
	if fenced, ok := write.AsFenced(err); ok {
		// The object moved to another replica since the cycle decided:
		// nothing landed, and nothing is kept, since the new owner
		// handles it from what is stored on it (at least once). Its
		// leaving the cache ends its daemons here.
		o.Local.Info(fmt.Sprintf("The changes of this cycle were not written: %v.", fenced.Err))
		return reconcile.Result{}, nil
	}
	if err != nil {
		if !eff.Patch.IsEmpty() {
			o.Mem.Unwritten = eff.Patch
			o.Local.Error(err, "The changes of this cycle could not be written; they are kept and written first in the next cycle.")
		}
		return reconcile.Result{}, err
	}
	written := o.Obj.GetResourceVersion() != before
	if written {
		o.Mem.ExpectedVersion = o.Obj.GetResourceVersion()
		o.Mem.ConsistencyDeadline = r.s.Clock.Now().Add(r.s.ConsistencyTimeout)
	}
	next := requeueAfter(eff.Left, written, conflict)
	switch next.Log {
	case sleeping:
		o.Local.V(1).Info(fmt.Sprintf("Sleeping for %s seconds for the delayed handlers.", execution.Seconds(eff.Left.Delay.Round(logPrecision))))
	case sleepSkipped:
		o.Local.V(1).Info("Sleeping was skipped because of the patch, 0 seconds left.")
	}
	return reconcile.Result{RequeueAfter: next.After}, nil
}

// forgetGone ends the work on an object that a write found gone: nothing
// of the write landed, and nothing of it is kept. Its daemons and timers
// stop as for a deleted object, and its memory is marked, so that a cache
// that still shows it runs nothing more for it; the memory goes once the
// cache shows it gone or another object under its name.
func (r *Reconciler) forgetGone(o Object, gone *write.GoneError) {
	write.LogGone(o.Local, gone)
	o.Mem.Gone = true
	r.gone(o.Obj.GetUID())
}

// keepOversizedEssence keeps an oversized last handled essence out of the
// patch (the API server would reject the whole write, and with it the
// handlers' progress): the essence is then kept in this process's memory,
// and the problem is logged and posted as a Warning Event.
func (r *Reconciler) keepOversizedEssence(ctx context.Context, o Object, eff effects) {
	if eff.Essence == nil {
		return
	}
	size := 0
	patched, _ := eff.Patch.Get("metadata", "annotations")
	changes, _ := patched.(map[string]any)
	for k, v := range o.Obj.GetAnnotations() {
		if _, changed := changes[k]; !changed {
			size += len(k) + len(v)
		}
	}
	for k, v := range changes {
		if s, ok := v.(string); ok {
			size += len(k) + len(s)
		}
	}
	if size <= annotationsSizeLimit {
		o.Mem.OversizedEssence = nil
		return
	}
	r.s.DiffBase.Forget(o.Body, eff.Patch)
	o.Mem.OversizedEssence = eff.Essence
	r.report(ctx, o, "oversized", fmt.Sprint(size), ReasonDiffBaseTooLarge,
		fmt.Sprintf("The last handled configuration does not fit into the annotations (%d bytes of annotations, the limit is %d); it is kept in memory only, so after a restart the changes since the last stored one are handled again. A status diffbase storage avoids this.", size, annotationsSizeLimit))
}

// sleep is the log line that goes with a requeue for pending handlers.
type sleep int

const (
	noSleep sleep = iota
	// sleeping: "Sleeping for N seconds for the delayed handlers."
	sleeping
	// sleepSkipped: the write brings a watch event that starts the next
	// cycle; no requeue of the engine's own.
	sleepSkipped
)

// requeue is when the object comes back after a cycle.
type requeue struct {
	After time.Duration
	Log   sleep
}

// soon is the shortest requeue: after a conflicted finalizer write, and
// for a pending handler that is due now but whose cycle wrote nothing
// (so no watch event comes).
const soon = time.Millisecond

// requeueAfter decides when to come back once the cycle's patch is
// written (written: the API server changed the object; conflict: the
// finalizer's write conflicted and was left out).
func requeueAfter(l leftover, written, conflict bool) requeue {
	switch {
	case conflict:
		return requeue{After: soon}
	case l.Blocking:
		// Daemons that exit ask for a reconcile themselves; this is the
		// slow re-check of those that do not.
		return requeue{After: l.Polling}
	case l.Pending && (l.Delay > 0 || !written):
		return requeue{After: max(l.Delay, soon), Log: sleeping}
	case l.Pending:
		return requeue{Log: sleepSkipped}
	}
	return requeue{}
}
