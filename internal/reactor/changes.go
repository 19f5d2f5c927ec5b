package reactor

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kopf-go/kopf/internal/causes"
	"github.com/kopf-go/kopf/internal/execution"
	"github.com/kopf-go/kopf/internal/fields"
	"github.com/kopf-go/kopf/internal/registry"
)

// processChange handles a create, update, delete or resume cause: it loads
// the handlers' progress, runs the next due handler, stores the progress
// and results, and when all selected handlers are finished, purges the
// progress and stores the new essence as the last handled one.
func (r handlerRound) processChange(ctx context.Context, c *cycle, subject *registry.Subject, newEssence, oldEssence map[string]any, now time.Time) {
	reason := subject.Cause.Reason
	title := reason.Title()
	rd := r.loadRound(c, r.kind, subject, now, func(id string, err error) {
		raw := ""
		if v, ok := fields.Resolve(c.body, fields.Path{"metadata", "annotations"}); ok {
			raw = fmt.Sprint(v)
		}
		r.report(ctx, c, "progress/"+id, raw, ReasonInvalidProgress,
			fmt.Sprintf("The progress of handler '%s' cannot be read and is ignored; the handler runs as if for the first time: %v", id, err))
	})
	state := rd.state
	r.supersede(c, rd, reason)
	state.Activate(string(reason), rd.selectedIDs, now)

	c.log.V(1).Info(fmt.Sprintf("%s is in progress: %s", title, c.obj.GetName()))
	if len(subject.Cause.Diff) > 0 && oldEssence != nil {
		c.log.V(1).Info(fmt.Sprintf("%s diff: %s", title, subject.Cause.Diff))
	}

	done := len(rd.selected) == 0
	if !done {
		ran := r.advance(ctx, c, subject, rd, now)
		if ran {
			now = r.settings.Clock.Now()
		}
		done = state.Done()
		switch {
		case !done:
			c.left.Pending = true
			c.left.Delay, _ = state.Delay(now)
		case ran:
			n := state.Counts()
			c.log.Info(fmt.Sprintf("%s is processed: %d succeeded; %d failed.", title, n.Success, n.Failure))
		}
		// A deleted object's records stay until it goes (they go with it):
		// the cycle that removes the finalizer may not be the last one
		// (daemons still keep the object, or the finalizer's removal
		// conflicts with another write), and the next cycle must find the
		// deletion handlers done, not run them again on a purged state.
		if done && !subject.Deleting {
			for _, id := range rd.ids {
				r.purgeHandler(c, state, id)
			}
		}
	}
	if done {
		if oldEssence == nil || !fields.Equal(oldEssence, newEssence) {
			r.storeEssence(c, newEssence)
		}
		c.mem.fullyHandledOnce = true
	}
	// A failure for good stands until a later cause is handled; a retry
	// until the handler runs again.
	r.memories.stand(c.mem, state.Standing(now))
}

// round is one cycle's turn of a set of change handlers (the kind's, or a
// parent's sub-handlers): their progress as loaded, and those the cause
// selects.
type round struct {
	ids         []string
	state       *execution.State
	selected    []*registry.ChangeHandler
	selectedIDs []string
}

// loadRound loads the progress of the kind's handlers and selects those
// the cause calls for; invalid hears of records that cannot be read.
func (r handlerRound) loadRound(c *cycle, kind *registry.Kind, subject *registry.Subject, now time.Time, invalid func(id string, err error)) round {
	rd := round{ids: kind.IDs()}
	rd.state = execution.Load(c.body, r.settings.Progress, rd.ids, now, invalid)
	rd.selected = kind.Select(subject)
	rd.selectedIDs = make([]string, len(rd.selected))
	for i, h := range rd.selected {
		rd.selectedIDs[i] = h.ID
	}
	return rd
}

// advance runs the next due handler of an activated round, if one is due,
// and stores the records that changed; it reports whether one ran.
func (r handlerRound) advance(ctx context.Context, c *cycle, subject *registry.Subject, rd round, now time.Time) bool {
	id, ok := rd.state.Next(rd.selectedIDs, now)
	if ok {
		r.runHandler(ctx, c, subject, rd.selected, rd.state, id, now)
	}
	for _, id := range rd.state.Order {
		if h := rd.state.Handlers[id]; h.Active && h.Changed() {
			r.settings.Progress.Store(c.body, c.patch, id, h.Record())
		}
	}
	return ok
}

// supersede purges the records of an unfinished earlier cause that this
// one supersedes, and says so.
func (r handlerRound) supersede(c *cycle, rd round, reason causes.Reason) {
	for purpose, n := range rd.state.Extras(string(reason)) {
		c.log.Info(fmt.Sprintf("%s is superseded by %s: %d succeeded; %d failed; %d left to the moment.",
			causes.Reason(purpose).Title(), strings.ToLower(reason.Title()), n.Success, n.Failure, n.Running))
	}
	for _, id := range r.supersededIDs(rd.state, string(reason), rd.selectedIDs) {
		r.purgeHandler(c, rd.state, id)
		rd.state.Drop(id)
	}
}

// supersededIDs are the loaded records of another purpose that the current
// cause does not select: they are purged. (Kopf purges every record in that
// case and rewrites only the changed ones, which can lose the record of a
// re-selected, unchanged handler; purging only the superseded keeps it.)
func (r handlerRound) supersededIDs(state *execution.State, purpose string, selected []string) []string {
	var out []string
	for _, id := range state.Order {
		h := state.Handlers[id]
		if h.Purpose == "" || h.Purpose == purpose {
			continue
		}
		if !slices.Contains(selected, id) {
			out = append(out, id)
		}
	}
	return out
}

// purgeHandler removes a handler's record and its sub-handlers' records.
func (r handlerRound) purgeHandler(c *cycle, state *execution.State, id string) {
	r.settings.Progress.Purge(c.body, c.patch, id)
	if h := state.Handlers[id]; h != nil {
		for _, sub := range h.Subrefs {
			r.settings.Progress.Purge(c.body, c.patch, sub)
		}
	}
}

// runHandler runs one attempt of the handler with the given id, records the
// outcome in the state and delivers its result into status.<id>.
func (r handlerRound) runHandler(ctx context.Context, c *cycle, subject *registry.Subject, selected []*registry.ChangeHandler, state *execution.State, id string, now time.Time) {
	var h *registry.ChangeHandler
	for _, candidate := range selected {
		if candidate.ID == id {
			h = candidate
		}
	}
	hs := state.Handlers[id]
	// The operator's stop waits for the handler, and names it while it does.
	done := r.sup.Track(fmt.Sprintf("%s of %s", h.Handler, c.ref()))
	started := r.settings.Clock.Now()
	outcome := r.invoke(ctx, c, subject, h, hs, now)
	r.invoked(id, string(subject.Cause.Reason), outcome, r.settings.Clock.Since(started))
	done()
	if outcome.Cancelled {
		return // the operator is stopping; the handler runs again after the restart
	}
	state.Handlers[id] = hs.WithOutcome(outcome, r.settings.Clock.Now())
	if outcome.Err == nil && outcome.Result != nil {
		if err := c.patch.SetResult(id, outcome.Result); err != nil {
			c.log.Error(err, fmt.Sprintf("The result of handler '%s' cannot be stored: it does not encode as JSON.", id))
		}
	}
}

// invoke calls the handler once, and then the sub-handlers it registered:
// while any of them is not finished, the parent is not either (it runs
// again, as in Kopf; parents must be idempotent).
func (r handlerRound) invoke(ctx context.Context, c *cycle, subject *registry.Subject, h *registry.ChangeHandler, hs *execution.HandlerState, now time.Time) execution.Outcome {
	cause := h.Narrow(*subject.Cause)
	cause.Retry = hs.Retries
	cause.Started = hs.Started
	cause.Runtime = hs.Runtime(now)
	causes.AllowSubhandlers(&cause)
	obj := c.obj.DeepCopyObject().(registry.Object)
	var subrefs []string
	outcome := execution.Execute(r.handlerContext(ctx, c.log), &h.Handler, hs, now, r.settings.defaults(), func(ctx context.Context) (any, error) {
		result, err := h.Fn(ctx, obj, &cause)
		if err != nil || len(causes.Subhandlers(&cause)) == 0 {
			return result, err
		}
		done, delay, refs := r.runSubhandlers(ctx, c, subject, h.ID, causes.Subhandlers(&cause), now)
		subrefs = refs
		if !done {
			return nil, &execution.ChildrenRetry{Delay: delay}
		}
		return result, nil
	})
	outcome.Subrefs = subrefs
	return outcome
}

// runSubhandlers runs the due one of the sub-handlers a parent registered
// (one per cycle, as the top-level handlers), with ids "<parent>/<id>",
// their progress kept beside the parent's, and their results in
// status.<parent>/<id>. It reports whether all are finished, when the next
// is due, and all their ids (sub-handlers of sub-handlers included).
func (r handlerRound) runSubhandlers(ctx context.Context, c *cycle, subject *registry.Subject, parent string, registered []any, now time.Time) (bool, time.Duration, []string) {
	var subs []*registry.ChangeHandler
	for _, item := range registered {
		h := *item.(*registry.ChangeHandler) // each parent call registers afresh
		h.ID = registry.SubID(parent, h.ID)
		subs = append(subs, &h)
	}
	rd := r.loadRound(c, &registry.Kind{Changing: subs}, subject, now, func(id string, err error) {
		c.log.Error(err, fmt.Sprintf("The progress of sub-handler '%s' cannot be read and is ignored.", id))
	})
	rd.state.Activate(string(subject.Cause.Reason), rd.selectedIDs, now)
	r.advance(ctx, c, subject, rd, now)
	refs := append([]string(nil), rd.ids...)
	for _, id := range rd.state.Order {
		refs = append(refs, rd.state.Handlers[id].Subrefs...)
	}
	delay, pending := rd.state.Delay(r.settings.Clock.Now())
	return !pending, delay, refs
}
