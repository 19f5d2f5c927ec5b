package reactor

import (
	"context"
	"slices"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kopf-go/kopf/internal/causes"
	"github.com/kopf-go/kopf/internal/daemons"
	"github.com/kopf-go/kopf/internal/registry"
	"github.com/kopf-go/kopf/pkg/diff"
	"github.com/kopf-go/kopf/pkg/patch"
)

// The cycle of one object is a pipeline of three stages: gather the facts
// (gather), decide what to do with them (decide.go, pure), and carry the
// plan out through the kind's collaborators: the change handlers' round,
// the daemons' sync and the writer. Each collaborator is a small
// interface, so that a test puts a fake in its place (cycle_test.go).

// changeHandlers run the change handlers of a cause: one round of them
// per cycle (handlerRound).
type changeHandlers interface {
	processChange(ctx context.Context, c *cycle, subject *registry.Subject, newEssence, oldEssence map[string]any, now time.Time)
}

// objectDaemons keep an object's daemons and timers in line with it
// (daemonSync).
type objectDaemons interface {
	// syncDaemons spawns those that match the object, stops the others.
	syncDaemons(c *cycle)
	// stopDaemons stops those of a deleted object, noting in the cycle
	// which still keep it.
	stopDaemons(c *cycle)
	// stopAndWait stops them all for the reason, and names those that
	// still run.
	stopAndWait(c *cycle, reason daemons.StopReason) []string
	// daemonsRequireFinalizer: one that matches needs the finalizer.
	daemonsRequireFinalizer(c *cycle) bool
}

// cycleWriter writes what a cycle decided (writer).
type cycleWriter interface {
	// commit writes the cycle's patch and finalizer change; conflict: the
	// finalizer's write conflicted and was left out.
	commit(ctx context.Context, log logr.Logger, obj client.Object, p *patch.Patch, fin finalizerChange) (conflict bool, err error)
	// acknowledge writes a handover's acknowledgement, guarded by the
	// object's resourceVersion.
	acknowledge(ctx context.Context, obj client.Object, ack map[string]any) error
}

// pipeline runs the cycles of one kind's objects.
type pipeline struct {
	*kindState
	handlers changeHandlers
	daemons  objectDaemons
	writes   cycleWriter
}

// run carries one cycle through the stages, from the object as read to
// when it comes back.
func (p *pipeline) run(ctx context.Context, c *cycle, now time.Time) (reconcile.Result, error) {
	f := p.gather(c, now)
	var subject *registry.Subject
	pl := decide(f, func(reason causes.Reason, initial bool) matches {
		subject = p.changeSubject(c, reason, initial, f.Diff)
		return p.matches(c, subject)
	})
	// After decide: its lookup asks whether daemons need the finalizer,
	// which a sync does not change (only daemons that ended on their own
	// need it no more).
	if pl.syncsDaemons() {
		p.daemons.syncDaemons(c)
	}
	switch pl.Step {
	case stepHandOver:
		return p.handOver(ctx, c, pl)
	case stepStandBy:
		return p.standBy(c, pl.Why)
	case stepWaitForCache:
		// The watch event of the awaited write usually starts the next
		// cycle before the wait is over.
		c.local.V(1).Info("The object is not yet as this operator last wrote it; waiting for the cache.",
			"resourceVersion", c.obj.GetResourceVersion(), "expected", c.mem.expectedVersion)
		return reconcile.Result{RequeueAfter: pl.Wait}, nil
	case stepWriteUnwritten:
		c.local.Info("Writing the changes that the previous cycle could not write.")
		c.patch, c.mem.unwritten = c.mem.unwritten, nil
		return p.apply(ctx, c)
	}
	p.handle(ctx, c, pl, subject, now)
	return p.apply(ctx, c)
}

// gather collects what the cycle knows of its object before anything is
// done: whose it is, whether the cache lags behind this process's last
// write, unwritten outcomes, and the change since the last handled
// essence (kept in the cycle for the handlers).
func (p *pipeline) gather(c *cycle, now time.Time) facts {
	c.newEssence = p.settings.DiffBase.Build(c.body, p.kind.ExtraFields())
	p.settings.Progress.Clear(c.newEssence)
	deleting := c.obj.GetDeletionTimestamp() != nil
	c.oldEssence, c.diffBaseErr = p.lastHandled(c, deleting)
	return facts{
		Claim:           p.own.claim(c.obj, now),
		CacheWait:       p.consistencyWait(c, now),
		Unwritten:       c.mem.unwritten != nil,
		Deleting:        deleting,
		Finalized:       slices.Contains(c.obj.GetFinalizers(), p.settings.Finalizer),
		DiffBaseInvalid: c.diffBaseErr != nil,
		HasDiffBase:     c.oldEssence != nil,
		Diff:            diff.Compute(asAny(c.oldEssence), c.newEssence),
		Initial:         c.mem.noticedByListing && !c.mem.fullyHandledOnce,
	}
}
