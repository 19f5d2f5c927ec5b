package reactor

import (
	"context"
	"fmt"
	"time"

	"github.com/kopf-go/kopf/internal/causes"
	"github.com/kopf-go/kopf/internal/execution"
	"github.com/kopf-go/kopf/internal/registry"
	"github.com/kopf-go/kopf/pkg/diff"
)

// handle carries out the change handlers' part of a plan: reports, the
// finalizer, the daemons' stop, the change handlers. It fills the
// cycle's patch and its finalizer change. subject is what the plan's
// lookup built (nil if the registry was not asked).
func (p *pipeline) handle(ctx context.Context, c *cycle, pl plan, subject *registry.Subject, now time.Time) {
	switch {
	case pl.ReportDiffBase:
		p.report(ctx, c, "diffbase", fmt.Sprint(c.diffBaseErr), ReasonInvalidDiffBase,
			fmt.Sprintf("The last handled configuration cannot be read, so changes cannot be told apart; no change handlers run until it is fixed or removed (removing it makes the object count as new): %v", c.diffBaseErr))
		return
	case pl.Free:
		c.log.V(1).Info("Deletion, but we are done with it, and we do not care.")
		return
	}
	if pl.Stealth {
		// No handler of it can retry or fail any more. (The standing is
		// read under the memories' lock: a stopping engine reads it too.)
		p.memories.stand(c.mem, execution.Standing{})
	}
	switch c.finalizer = pl.Finalizer; c.finalizer {
	case addFinalizer:
		c.local.V(1).Info("Adding the finalizer, thus preventing the actual deletion.")
		return
	case removeFinalizer:
		c.local.V(1).Info("Removing the finalizer, as there are no handlers requiring it.")
		return
	}
	if pl.StopDaemons {
		p.daemons.stopDaemons(c)
	}
	switch {
	case pl.RunHandlers:
		p.handlers.processChange(ctx, c, subject, c.newEssence, c.oldEssence, now)
	case pl.NoOp:
		c.log.V(1).Info("Something has changed, but we are not interested (the essence is the same).")
	}
	if c.finalizer = pl.settle(c.left); c.finalizer == removeFinalizer {
		c.local.V(1).Info("Removing the finalizer, thus allowing the actual deletion.")
	}
}

// lastHandled reads the last handled essence: the stored one, or the one
// kept in memory when it was too large to store. An unreadable one is an
// error unless the object is being deleted (deletion does not need it).
func (p *pipeline) lastHandled(c *cycle, deleting bool) (map[string]any, error) {
	old, err := p.settings.DiffBase.Fetch(c.body)
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
		p.settings.Progress.Clear(old)
	}
	return old, nil
}

// changeSubject is what change handlers' filters look at, and what they
// get: the object, and the cause.
func (p *pipeline) changeSubject(c *cycle, reason causes.Reason, initial bool, d diff.Diff) *registry.Subject {
	return &registry.Subject{
		Obj:         c.obj,
		Labels:      c.obj.GetLabels(),
		Annotations: c.obj.GetAnnotations(),
		Cause: &causes.Cause{Reason: reason, Body: c.body, Old: asAny(c.oldEssence), New: c.newEssence, Diff: d, Patch: c.patch,
			Memo: c.mem.memo, Indices: p.settings.Indices},
		Initial:        initial,
		Deleting:       c.obj.GetDeletionTimestamp() != nil,
		FilterPanicked: p.filterPanicked(c.log),
	}
}

// matches asks the registry about the object: whether a change handler
// prematches it, and whether a handler or a daemon needs the finalizer.
// The daemons' filters (users' code) are not asked when a handler already
// needs the finalizer: their answer would change nothing.
func (p *pipeline) matches(c *cycle, subject *registry.Subject) matches {
	m := matches{Visible: p.kind.Prematch(subject)}
	m.HandlersNeedFinalizer = m.Visible && p.kind.RequiresFinalizer(subject)
	m.DaemonsNeedFinalizer = !m.HandlersNeedFinalizer && p.daemons.daemonsRequireFinalizer(c)
	return m
}
