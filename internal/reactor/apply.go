package reactor

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

// logPrecision is what measured delays are rounded to in log lines: the
// clock's nanosecond noise is not worth printing ("1.5", not "1.499999").
const logPrecision = time.Millisecond

// storeEssence adds the new last handled essence to the cycle's patch.
func (r *kindState) storeEssence(c *cycle, essence map[string]any) {
	r.settings.DiffBase.Store(c.body, c.patch, essence)
	c.essence = essence
}

// apply writes the cycle's patch and finalizer decision, remembers the
// written resourceVersion for the consistency wait, and tells when to come
// back (requeueAfter): a due or sleeping handler is requeued after its
// delay, unless the write itself brings a watch event that starts the next
// cycle.
func (p *pipeline) apply(ctx context.Context, c *cycle) (reconcile.Result, error) {
	p.guardAnnotationsSize(ctx, c)
	before := c.obj.GetResourceVersion()
	conflict, err := p.writes.Commit(ctx, c.local, c.obj, c.patch, c.finalizer)
	if gone, ok := write.AsGone(err); ok {
		p.forgetGone(c, gone)
		return reconcile.Result{}, nil
	}
	if err != nil {
		if !c.patch.IsEmpty() {
			c.mem.unwritten = c.patch
			c.local.Error(err, "The changes of this cycle could not be written; they are kept and written first in the next cycle.")
		}
		return reconcile.Result{}, err
	}
	written := c.obj.GetResourceVersion() != before
	if written {
		c.mem.expectedVersion = c.obj.GetResourceVersion()
		c.mem.consistencyDeadline = p.settings.Clock.Now().Add(p.settings.ConsistencyTimeout)
	}
	next := requeueAfter(c.left, written, conflict)
	switch next.Log {
	case sleeping:
		c.local.V(1).Info(fmt.Sprintf("Sleeping for %s seconds for the delayed handlers.", execution.Seconds(c.left.Delay.Round(logPrecision))))
	case sleepSkipped:
		c.local.V(1).Info("Sleeping was skipped because of the patch, 0 seconds left.")
	}
	return reconcile.Result{RequeueAfter: next.After}, nil
}

// forgetGone ends the work on an object that a write found gone: nothing
// of the write landed, and nothing of it is kept. Its daemons and timers
// stop as for a deleted object, and its memory is marked, so that a cache
// that still shows it runs nothing more for it; the memory goes once the
// cache shows it gone or another object under its name.
func (p *pipeline) forgetGone(c *cycle, gone *write.GoneError) {
	write.LogGone(c.local, gone)
	c.mem.gone = true
	p.sup.Gone(c.obj.GetUID())
}

// guardAnnotationsSize keeps an oversized last handled essence out of the
// patch (the API server would reject the whole write, and with it the
// handlers' progress): the essence is then kept in this process's memory,
// and the problem is logged and posted as a Warning Event.
func (p *pipeline) guardAnnotationsSize(ctx context.Context, c *cycle) {
	if c.essence == nil {
		return
	}
	size := 0
	current := c.obj.GetAnnotations()
	patched, _ := c.patch.Get("metadata", "annotations")
	changes, _ := patched.(map[string]any)
	for k, v := range current {
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
		c.mem.oversizedEssence = nil
		return
	}
	p.settings.DiffBase.Forget(c.body, c.patch)
	c.mem.oversizedEssence = c.essence
	p.report(ctx, c, "oversized", fmt.Sprint(size), ReasonDiffBaseTooLarge,
		fmt.Sprintf("The last handled configuration does not fit into the annotations (%d bytes of annotations, the limit is %d); it is kept in memory only, so after a restart the changes since the last stored one are handled again. A status diffbase storage avoids this.", size, annotationsSizeLimit))
}
