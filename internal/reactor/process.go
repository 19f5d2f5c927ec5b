package reactor

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/kopf-go/kopf/internal/causes"
	"github.com/kopf-go/kopf/internal/diff"
	"github.com/kopf-go/kopf/internal/execution"
	"github.com/kopf-go/kopf/internal/registry"
)

// process decides the cycle (decide.go) and carries the decision out:
// reports, the finalizer, the daemons' stop, the change handlers. It
// fills the cycle's patch and its finalizer change.
func (r *reconciler) process(ctx context.Context, c *cycle, now time.Time) {
	deleting := c.obj.GetDeletionTimestamp() != nil
	oldEssence, invalid := r.lastHandled(c, deleting)
	d := diff.Compute(asAny(oldEssence), c.newEssence)
	var subject *registry.Subject
	p := decide(facts{
		Deleting:        deleting,
		Finalized:       slices.Contains(c.obj.GetFinalizers(), r.settings.Finalizer),
		DiffBaseInvalid: invalid != nil,
		HasDiffBase:     oldEssence != nil,
		Diff:            d,
		Initial:         c.mem.noticedByListing && !c.mem.fullyHandledOnce,
	}, func(reason causes.Reason, initial bool) matches {
		subject = r.changeSubject(c, reason, initial, oldEssence, d)
		return r.matches(c, subject)
	})
	switch {
	case p.ReportDiffBase:
		r.report(ctx, c, "diffbase", fmt.Sprint(invalid), ReasonInvalidDiffBase,
			fmt.Sprintf("The last handled configuration cannot be read, so changes cannot be told apart; no change handlers run until it is fixed or removed (removing it makes the object count as new): %v", invalid))
		return
	case p.Free:
		c.log.V(1).Info("Deletion, but we are done with it, and we do not care.")
		return
	}
	if p.Stealth {
		// No handler of it can retry or fail any more. (The standing is
		// read under the memories' lock: a stopping engine reads it too.)
		r.memories.stand(c.mem, execution.Standing{})
	}
	switch c.finalizer = p.Finalizer; c.finalizer {
	case addFinalizer:
		c.local.V(1).Info("Adding the finalizer, thus preventing the actual deletion.")
		return
	case removeFinalizer:
		c.local.V(1).Info("Removing the finalizer, as there are no handlers requiring it.")
		return
	}
	if p.StopDaemons {
		daemonSync{r.kindState}.stopDaemons(c)
	}
	switch {
	case p.RunHandlers:
		handlerRound{r.kindState}.processChange(ctx, c, subject, c.newEssence, oldEssence, now)
	case p.NoOp:
		c.log.V(1).Info("Something has changed, but we are not interested (the essence is the same).")
	}
	if c.finalizer = p.settle(c.left); c.finalizer == removeFinalizer {
		c.local.V(1).Info("Removing the finalizer, thus allowing the actual deletion.")
	}
}

// lastHandled reads the last handled essence: the stored one, or the one
// kept in memory when it was too large to store. An unreadable one is an
// error unless the object is being deleted (deletion does not need it).
func (r *reconciler) lastHandled(c *cycle, deleting bool) (map[string]any, error) {
	old, err := r.settings.DiffBase.Fetch(c.body)
	if err != nil {
		if !deleting {
			return nil, err
		}
		old = nil
	}
	if c.mem.oversizedEssence != nil {
		old = c.mem.oversizedEssence
	}
	if old != nil {
		r.settings.Progress.Clear(old)
	}
	return old, nil
}

// changeSubject is what change handlers' filters look at, and what they
// get: the object, and the cause.
func (r *reconciler) changeSubject(c *cycle, reason causes.Reason, initial bool, old map[string]any, d diff.Diff) *registry.Subject {
	return &registry.Subject{
		Obj:         c.obj,
		Labels:      c.obj.GetLabels(),
		Annotations: c.obj.GetAnnotations(),
		Cause: &causes.Cause{Reason: reason, Body: c.body, Old: asAny(old), New: c.newEssence, Diff: d, Patch: c.patch,
			Memo: c.mem.memo, Indices: r.settings.Indices},
		Initial:  initial,
		Deleting: c.obj.GetDeletionTimestamp() != nil,
	}
}

// matches asks the registry about the object: whether a change handler
// prematches it, and whether a handler or a daemon needs the finalizer.
// The daemons' filters (users' code) are not asked when a handler already
// needs the finalizer: their answer would change nothing.
func (r *reconciler) matches(c *cycle, subject *registry.Subject) matches {
	m := matches{Visible: r.kind.Prematch(subject)}
	m.HandlersNeedFinalizer = m.Visible && r.kind.RequiresFinalizer(subject)
	m.DaemonsNeedFinalizer = !m.HandlersNeedFinalizer && daemonSync{r.kindState}.daemonsRequireFinalizer(c)
	return m
}
