package daemons

import (
	"context"
	"fmt"
	"github.com/kopf-go/kopf/internal/mergepatch"
	"time"

	"github.com/kopf-go/kopf/internal/execution"
)

// writeTimeout bounds the write of a daemon's last result, which happens
// even when its context is already cancelled.
const writeTimeout = 30 * time.Second

// finish delivers an attempt's result and patch and advances the state.
//
//go:noinline
func (r *runner) finish(state *execution.HandlerState, cause *DaemonCause, outcome execution.Outcome) *execution.HandlerState {
	if outcome.Cancelled {
		return state // stopping: the loop ends, nothing is recorded
	}
	if outcome.Err == nil && outcome.Result != nil {
		if err := mergepatch.SetResult(cause.Patch, r.h.ID, outcome.Result); err != nil {
			r.log.Error(err, fmt.Sprintf("The result of %s cannot be stored.", r.h.Handler))
		}
	}
	if !cause.Patch.IsEmpty() {
		// The last result of a stopping daemon is written too, so the write
		// must not depend on the daemon's own (cancelled) context.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.ctx), writeTimeout)
		if err := r.obj.host.Apply(ctx, r.obj.ref, cause.Patch); err != nil {
			r.log.Error(err, fmt.Sprintf("The changes of %s could not be written.", r.h.Handler))
		}
		cancel()
	}
	return state.WithOutcome(outcome, r.sup.clock.Now())
}
