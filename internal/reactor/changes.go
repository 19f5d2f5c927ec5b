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
func (r *reconciler) processChange(ctx context.Context, c *cycle, subject *registry.Subject, newEssence, oldEssence map[string]any, now time.Time) {
	s := r.settings
	reason := subject.Cause.Reason
	title := reason.Title()
	ids := r.kind.IDs()
	state := execution.Load(c.body, s.Progress, ids, now, func(id string, err error) {
		raw := ""
		if v, ok := fields.Resolve(c.body, fields.Path{"metadata", "annotations"}); ok {
			raw = fmt.Sprint(v)
		}
		r.report(ctx, c, "progress/"+id, raw, ReasonInvalidProgress,
			fmt.Sprintf("The progress of handler '%s' cannot be read and is ignored; the handler runs as if for the first time: %v", id, err))
	})

	selected := r.kind.Select(subject)
	selectedIDs := make([]string, len(selected))
	for i, h := range selected {
		selectedIDs[i] = h.ID
	}
	// Records of an unfinished earlier cause are superseded by this one.
	for purpose, n := range state.Extras(string(reason)) {
		c.log.Info(fmt.Sprintf("%s is superseded by %s: %d succeeded; %d failed; %d left to the moment.",
			causes.Reason(purpose).Title(), strings.ToLower(title), n.Success, n.Failure, n.Running))
	}
	for _, id := range r.supersededIDs(state, string(reason), selectedIDs) {
		r.purgeHandler(c, state, id)
		state.Drop(id)
	}
	state.Activate(string(reason), selectedIDs, now)

	c.log.V(1).Info(fmt.Sprintf("%s is in progress: %s", title, c.obj.GetName()))
	if len(subject.Cause.Diff) > 0 && oldEssence != nil {
		c.log.V(1).Info(fmt.Sprintf("%s diff: %s", title, subject.Cause.Diff))
	}

	done := len(selected) == 0
	if !done {
		ran := false
		if id, ok := state.Next(selectedIDs, now); ok {
			r.runHandler(ctx, c, subject, selected, state, id, now)
			now = r.settings.Clock.Now()
			ran = true
		}
		for _, id := range state.Order {
			if h := state.Handlers[id]; h.Active && h.Changed() {
				s.Progress.Store(c.body, c.patch, id, h.Record())
			}
		}
		done = state.Done()
		// A deleted object's records stay until it goes (they go with it):
		// the cycle that removes the finalizer may not be the last one
		// (daemons still keep the object, or the finalizer's removal
		// conflicts with another write), and the next cycle must find the
		// deletion handlers done, not run them again on a purged state.
		keep := subject.Deleting
		if done {
			if ran {
				n := state.Counts()
				c.log.Info(fmt.Sprintf("%s is processed: %d succeeded; %d failed.", title, n.Success, n.Failure))
			}
			if !keep {
				for _, id := range ids {
					r.purgeHandler(c, state, id)
				}
			}
		} else {
			c.left.Pending = true
			c.left.Delay, _ = state.Delay(now)
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

// supersededIDs are the loaded records of another purpose that the current
// cause does not select: they are purged. (Kopf purges every record in that
// case and rewrites only the changed ones, which can lose the record of a
// re-selected, unchanged handler; purging only the superseded keeps it.)
func (r *reconciler) supersededIDs(state *execution.State, purpose string, selected []string) []string {
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
func (r *reconciler) purgeHandler(c *cycle, state *execution.State, id string) {
	r.settings.Progress.Purge(c.body, c.patch, id)
	if h := state.Handlers[id]; h != nil {
		for _, sub := range h.Subrefs {
			r.settings.Progress.Purge(c.body, c.patch, sub)
		}
	}
}

// runHandler runs one attempt of the handler with the given id, records the
// outcome in the state and delivers its result into status.<id>.
func (r *reconciler) runHandler(ctx context.Context, c *cycle, subject *registry.Subject, selected []*registry.ChangeHandler, state *execution.State, id string, now time.Time) {
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
func (r *reconciler) invoke(ctx context.Context, c *cycle, subject *registry.Subject, h *registry.ChangeHandler, hs *execution.HandlerState, now time.Time) execution.Outcome {
	cause := h.Narrow(*subject.Cause)
	cause.Retry = hs.Retries
	cause.Started = hs.Started
	cause.Runtime = hs.Runtime(now)
	cause.AllowSubhandlers()
	obj := c.obj.DeepCopyObject().(registry.Object)
	var subrefs []string
	outcome := execution.Execute(r.handlerContext(ctx, c.log), &h.Handler, hs, now, r.settings.defaults(), func(ctx context.Context) (any, error) {
		result, err := h.Fn(ctx, obj, &cause)
		if err != nil || len(cause.Subhandlers()) == 0 {
			return result, err
		}
		done, delay, refs := r.runSubhandlers(ctx, c, subject, h.ID, cause.Subhandlers(), now)
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
func (r *reconciler) runSubhandlers(ctx context.Context, c *cycle, subject *registry.Subject, parent string, registered []any, now time.Time) (bool, time.Duration, []string) {
	var subs []*registry.ChangeHandler
	for _, item := range registered {
		h := *item.(*registry.ChangeHandler) // each parent call registers afresh
		h.ID = registry.SubID(parent, h.ID)
		subs = append(subs, &h)
	}
	kind := &registry.Kind{Changing: subs}
	selected := kind.Select(subject)
	ids := kind.IDs()
	state := execution.Load(c.body, r.settings.Progress, ids, now, func(id string, err error) {
		c.log.Error(err, fmt.Sprintf("The progress of sub-handler '%s' cannot be read and is ignored.", id))
	})
	selectedIDs := make([]string, len(selected))
	for i, h := range selected {
		selectedIDs[i] = h.ID
	}
	state.Activate(string(subject.Cause.Reason), selectedIDs, now)
	if id, ok := state.Next(selectedIDs, now); ok {
		r.runHandler(ctx, c, subject, selected, state, id, now)
	}
	refs := append([]string(nil), ids...)
	for _, id := range state.Order {
		h := state.Handlers[id]
		if h.Active && h.Changed() {
			r.settings.Progress.Store(c.body, c.patch, id, h.Record())
		}
		refs = append(refs, h.Subrefs...)
	}
	delay, pending := state.Delay(r.settings.Clock.Now())
	return !pending, delay, refs
}
