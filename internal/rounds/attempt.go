package rounds

import (
	"context"
	"fmt"
	"github.com/kopf-go/kopf/internal/mergepatch"
	"time"

	"github.com/kopf-go/kopf/internal/causes"
	"github.com/kopf-go/kopf/internal/execution"
	"github.com/kopf-go/kopf/internal/registry"
)

// run runs one attempt of the handler with the id, records the outcome in
// the state and delivers its result into status.<id>.
func (rd *round) run(ctx context.Context, env Env, subject *registry.Subject, id string, now time.Time) {
	var h *registry.ChangeHandler
	for _, candidate := range rd.selected {
		if candidate.ID == id {
			h = candidate
		}
	}
	hs := rd.state.Handlers[id]
	// The operator's stop waits for the handler, and names it while it
	// does; deferred, since a storage's panic in the handler's sub-handlers
	// ends the whole cycle from within (contain.Unwind).
	if env.Track != nil {
		defer env.Track(fmt.Sprintf("%s of %s", h.Handler, env.Ref))()
	}
	started := env.Clock.Now()
	outcome := invoke(ctx, env, subject, h, hs, now)
	if env.Observe != nil {
		env.Observe(id, string(subject.Cause.Reason), string(execution.Classify(outcome)), env.Clock.Since(started), !outcome.NotCalled)
	}
	if outcome.Panic != nil && env.Panicked != nil {
		env.Panicked(id)
	}
	if outcome.Cancelled {
		return // the operator is stopping; the handler runs again after the restart
	}
	rd.state.Handlers[id] = hs.WithOutcome(outcome, env.Clock.Now())
	if outcome.Err == nil && outcome.Result != nil {
		if err := mergepatch.SetResult(env.Patch, id, outcome.Result); err != nil {
			env.Log.Error(err, fmt.Sprintf("The result of handler '%s' cannot be stored: it does not encode as JSON.", id))
		}
	}
}

// invoke calls the handler once, and then the sub-handlers it registered:
// while any of them is not finished, the parent is not either (it runs
// again, as in Kopf; parents must be idempotent).
func invoke(ctx context.Context, env Env, subject *registry.Subject, h *registry.ChangeHandler, hs *execution.HandlerState, now time.Time) execution.Outcome {
	cause := h.Narrow(*subject.Cause)
	cause.Retry = hs.Retries
	cause.Started = hs.Started
	cause.Runtime = hs.Runtime(now)
	obj := env.Object.DeepCopyObject().(registry.Object)
	var subrefs []string
	outcome := execution.Execute(ctx, &h.Handler, hs, now, env.Defaults, func(ctx context.Context) (any, error) {
		callCtx, subs := causes.WithSubhandlers(ctx)
		result, err := execution.PlainResult(h.Fn(callCtx, obj, &cause))
		if err != nil || len(subs.List()) == 0 {
			return result, err
		}
		done, delay, refs := runSubhandlers(ctx, env, subject, h.ID, subs.List(), now)
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
func runSubhandlers(ctx context.Context, env Env, subject *registry.Subject, parent string, registered []any, now time.Time) (bool, time.Duration, []string) {
	var subs []*registry.ChangeHandler
	for _, item := range registered {
		h := *item.(*registry.ChangeHandler) // each parent call registers afresh
		h.ID = registry.SubID(parent, h.ID)
		subs = append(subs, &h)
	}
	rd := load(env, &registry.Kind{Changing: subs}, subject, now, func(id string, err error) {
		env.Log.Error(err, fmt.Sprintf("The progress of sub-handler '%s' cannot be read and is ignored.", id))
	})
	rd.state.Activate(string(subject.Cause.Reason), rd.selectedIDs, now)
	rd.advance(ctx, env, subject, now)
	refs := append([]string(nil), rd.ids...)
	for _, id := range rd.state.Order {
		refs = append(refs, rd.state.Handlers[id].Subrefs...)
	}
	delay, pending := rd.state.Delay(env.Clock.Now())
	return !pending, delay, refs
}
