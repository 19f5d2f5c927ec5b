package daemons

import (
	"context"
	"fmt"
	"time"

	"github.com/kopf-go/kopf/internal/causes"
	"github.com/kopf-go/kopf/internal/execution"
	"github.com/kopf-go/kopf/pkg/cause"
	"github.com/kopf-go/kopf/pkg/memo"
	"github.com/kopf-go/kopf/pkg/patch"
)

// attempt runs the function once on the object's latest state, delivers
// the result and the function's patch, and returns the next state. Its
// frame, like Execute's, stays on the stack while a daemon runs, so the
// work before and after the call lives in functions of its own.
func (r *runner) attempt(state *execution.HandlerState) *execution.HandlerState {
	obj, cause, now, err := r.prepare(state)
	if err != nil {
		return r.fetchFailed(state, err)
	}
	outcome := execution.Execute(r.logCtx, &r.h.Handler, state, now, r.defaults(), func(ctx context.Context) (any, error) {
		return execution.PlainResult(r.h.Fn(ctx, obj, cause))
	})
	r.sup.settings.Observer.Attempted(r.obj.host, &r.h, outcome, r.sup.clock.Since(now))
	return r.finish(state, cause, outcome)
}

// prepare reads the object and makes the cause of one attempt, begun now.
//
//go:noinline
func (r *runner) prepare(state *execution.HandlerState) (causes.Object, *DaemonCause, time.Time, error) {
	obj := r.first
	r.first = nil
	if obj == nil {
		var err error
		if obj, err = r.obj.host.Fetch(r.ctx, r.obj.ref); err != nil {
			return nil, nil, time.Time{}, err
		}
	}
	now := r.sup.clock.Now()
	c := cause.NewDaemon(r, obj)
	c.HandlerID, c.Param = r.h.ID, r.h.Param
	c.Retry, c.Started, c.Runtime = state.Retries, state.Started, state.Runtime(now)
	c.Patch, c.Memo, c.Indices = patch.New(), r.objectMemo(), r.sup.settings.Indices
	return obj, c, now, nil
}

// objectMemo is the object's memo as the last Sync gave it.
func (r *runner) objectMemo() *memo.Memo {
	if m := r.obj.memo.Load(); m != nil {
		return m
	}
	r.obj.memo.CompareAndSwap(nil, &memo.Memo{})
	return r.obj.memo.Load()
}

// fetchFailed retries later when the object cannot be read.
//
//go:noinline
func (r *runner) fetchFailed(state *execution.HandlerState, err error) *execution.HandlerState {
	r.log.Error(err, fmt.Sprintf("%s cannot read its object; trying again later.", r.h.Handler))
	delay := r.sup.settings.DefaultBackoff
	return state.WithOutcome(execution.Outcome{Err: err, Delay: &delay}, r.sup.clock.Now())
}

// defaults are what an attempt falls back on when the handler sets no error
// mode or backoff: errors are temporary, retried after the default backoff.
func (r *runner) defaults() execution.Defaults {
	return execution.Defaults{Errors: execution.ErrorsTemporary, Backoff: r.sup.settings.DefaultBackoff}
}

// delay is the wait before retrying an unfinished state.
func (r *runner) delay(state *execution.HandlerState) time.Duration {
	if state.Delayed == nil {
		return 0
	}
	return state.Delayed.Sub(r.sup.clock.Now())
}
