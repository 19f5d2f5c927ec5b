package daemons

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"

	"github.com/kopf-go/kopf/internal/causes"
	"github.com/kopf-go/kopf/internal/execution"
	"github.com/kopf-go/kopf/internal/memo"
	"github.com/kopf-go/kopf/internal/patch"
)

// writeTimeout bounds the write of a daemon's last result, which happens
// even when its context is already cancelled.
const writeTimeout = 30 * time.Second

// runner is one daemon or timer of one object: one goroutine, plus one
// more while it is being stopped with a backoff or a timeout.
type runner struct {
	sup *Supervisor
	obj *object
	h   Handler
	log logr.Logger
	ctx context.Context
	// logCtx is ctx with log in it, for the handler.
	logCtx context.Context
	cancel context.CancelCauseFunc
	// stopped is closed when the runner is asked to stop.
	stopped chan struct{}
	// done is closed when the runner's goroutine has returned.
	done chan struct{}
	// first is the object for the first attempt, if the spawner had it;
	// later attempts read it afresh.
	first causes.Object

	// Guarded by sup.mu.
	reason    StopReason
	stopSince time.Time
	abandoned bool
	// escalating: a backoff or a timeout of the stop is still running, so
	// the runner is not merely "still exiting".
	escalating bool
}

func (r *runner) stopReason() StopReason {
	r.sup.mu.Lock()
	defer r.sup.mu.Unlock()
	return r.reason
}

func (r *runner) isStopped() bool {
	select {
	case <-r.stopped:
		return true
	default:
		return false
	}
}

// sleep waits for the duration and reports true, or false once the runner
// is asked to stop or ctx is done.
func (r *runner) sleep(ctx context.Context, d time.Duration) bool {
	if r.isStopped() {
		return false
	}
	if d <= 0 {
		return true
	}
	t := r.sup.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return true
	case <-r.stopped:
		return false
	case <-ctx.Done():
		return false
	}
}

// run is the runner's goroutine.
func (r *runner) run() {
	defer r.sup.wg.Done()
	defer r.sup.exited(r)
	if r.h.InitialDelay != nil && !r.initialDelay() {
		r.logExit()
		return
	}
	switch r.h.Kind {
	case KindTimer:
		r.timer()
	default:
		r.daemon()
	}
	r.logExit()
}

// initialDelay sleeps the delay computed from the object, reading it again
// after the default backoff if it cannot be read; false if stopped.
func (r *runner) initialDelay() bool {
	for {
		obj, err := r.obj.host.Fetch(r.ctx, r.obj.ref)
		if err == nil {
			return r.sleep(r.ctx, r.h.InitialDelay(obj))
		}
		r.log.Error(err, fmt.Sprintf("%s cannot read its object for the initial delay; trying again later.", r.h.Handler))
		if !r.sleep(r.ctx, r.sup.settings.DefaultBackoff) {
			return false
		}
	}
}

func (r *runner) logExit() {
	if r.isStopped() {
		r.log.V(1).Info(fmt.Sprintf("%s has exited on request and will not be retried or restarted.", r.h.Handler))
	} else {
		r.log.V(1).Info(fmt.Sprintf("%s has exited on its own and will not be retried or restarted.", r.h.Handler))
	}
}

// daemon calls the function until it returns for good: success, a
// permanent error, or used-up retries; temporary errors restart it.
func (r *runner) daemon() {
	state := &execution.HandlerState{Active: true, Started: r.sup.clock.Now()}
	for !r.isStopped() && !state.Finished() {
		state = r.attempt(state)
		if !state.Finished() && !r.sleep(r.ctx, r.delay(state)) {
			return
		}
	}
}

// timer calls the function on its schedule until the runner is stopped.
// A tick that fails for good does not stop the timer (as in Kopf's code):
// the next tick starts afresh.
func (r *runner) timer() {
	state := &execution.HandlerState{Active: true, Started: r.sup.clock.Now()}
	for !r.isStopped() {
		if state.Finished() {
			state = &execution.HandlerState{Active: true, Started: r.sup.clock.Now()}
		}
		if r.h.Idle > 0 && !r.waitIdle() {
			return
		}
		started := r.sup.clock.Now()
		state = r.attempt(state)
		switch {
		case !state.Finished():
			if !r.sleep(r.ctx, r.delay(state)) {
				return
			}
		case r.h.Interval > 0 && r.h.Sharp:
			passed := r.sup.clock.Since(started)
			if !r.sleep(r.ctx, r.h.Interval-passed%r.h.Interval) {
				return
			}
		case r.h.Interval > 0:
			if !r.sleep(r.ctx, r.h.Interval) {
				return
			}
		case r.h.Idle > 0:
			// Idle only: wait for the next change of the essence, then idle again.
			for !r.obj.idleResetAfter(started) {
				if !r.sleep(r.ctx, r.h.Idle) {
					return
				}
			}
		default:
			return // neither interval nor idle: a one-shot timer
		}
	}
}

// waitIdle sleeps until the object's essence has not changed for the idle
// time; changes meanwhile prolong the wait.
func (r *runner) waitIdle() bool {
	for {
		left := r.obj.idleLeft(r.h.Idle)
		if left <= 0 {
			return true
		}
		if !r.sleep(r.ctx, left) {
			return false
		}
	}
}

// attempt runs the function once on the object's latest state, delivers
// the result and the function's patch, and returns the next state. Its
// frame, like Execute's, stays on the stack while a daemon runs, so the
// work before and after the call lives in functions of its own.
func (r *runner) attempt(state *execution.HandlerState) *execution.HandlerState {
	obj, cause, err := r.prepare(state)
	if err != nil {
		return r.fetchFailed(state, err)
	}
	outcome := execution.Execute(r.logCtx, &r.h.Handler, state, cause.now, r.defaults(), func(ctx context.Context) (any, error) {
		return r.h.Fn(ctx, obj, cause)
	})
	r.sup.settings.Observer.Attempted(r.obj.host, &r.h, outcome, r.sup.clock.Since(cause.now))
	return r.finish(state, cause, outcome)
}

// prepare reads the object and makes the cause of one attempt.
//
//go:noinline
func (r *runner) prepare(state *execution.HandlerState) (causes.Object, *DaemonCause, error) {
	obj := r.first
	r.first = nil
	if obj == nil {
		var err error
		if obj, err = r.obj.host.Fetch(r.ctx, r.obj.ref); err != nil {
			return nil, nil, err
		}
	}
	now := r.sup.clock.Now()
	return obj, &DaemonCause{
		HandlerID: r.h.ID,
		Retry:     state.Retries,
		Started:   state.Started,
		Runtime:   state.Runtime(now),
		Patch:     patch.New(),
		Memo:      r.objectMemo(),
		Indices:   r.sup.settings.Indices,
		r:         r,
		now:       now,
		obj:       obj,
	}, nil
}

// objectMemo is the object's memo as the last Sync gave it.
func (r *runner) objectMemo() *memo.Memo {
	r.sup.mu.Lock()
	defer r.sup.mu.Unlock()
	if r.obj.memo == nil {
		r.obj.memo = &memo.Memo{}
	}
	return r.obj.memo
}

// fetchFailed retries later when the object cannot be read.
//
//go:noinline
func (r *runner) fetchFailed(state *execution.HandlerState, err error) *execution.HandlerState {
	r.log.Error(err, fmt.Sprintf("%s cannot read its object; trying again later.", r.h.Handler))
	delay := r.sup.settings.DefaultBackoff
	return state.WithOutcome(execution.Outcome{Err: err, Delay: &delay}, r.sup.clock.Now())
}

// finish delivers an attempt's result and patch and advances the state.
//
//go:noinline
func (r *runner) finish(state *execution.HandlerState, cause *DaemonCause, outcome execution.Outcome) *execution.HandlerState {
	if outcome.Cancelled {
		return state // stopping: the loop ends, nothing is recorded
	}
	if outcome.Err == nil && outcome.Result != nil {
		if err := cause.Patch.SetResult(r.h.ID, outcome.Result); err != nil {
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

// stop asks the runner to stop for the reason (the caller holds sup.mu).
// The first request closes Stopped; the context is cancelled at once, or
// after the cancellation backoff; after the cancellation timeout the
// runner is abandoned. Later requests only add their reason.
func (r *runner) stop(reason StopReason) {
	r.reason |= reason
	if !r.stopSince.IsZero() {
		return
	}
	r.stopSince = r.sup.clock.Now()
	close(r.stopped)
	r.sup.settings.Observer.Stopping(r.obj.host, &r.h)
	backoff, timeout := r.h.CancellationBackoff, r.h.CancellationTimeout
	if r.h.Kind == KindTimer {
		backoff, timeout = 0, 0 // timers wake from their sleeps at once
	}
	if backoff > 0 {
		r.reason |= StopSignalled
		r.sup.settings.Local(r.log).V(1).Info(fmt.Sprintf("%s is signalled to exit gracefully.", r.h.Handler))
	} else {
		r.cancelLocked()
	}
	if backoff > 0 || timeout > 0 {
		r.escalating = true
		r.sup.wg.Add(1)
		go r.escalate(backoff, timeout)
	}
}

func (r *runner) cancelLocked() {
	r.reason |= StopCancelled
	if r.h.Kind == KindDaemon {
		// Timers are not forced: their sleeps end, and a tick in progress
		// learns from its context, as usual.
		r.sup.settings.Local(r.log).V(1).Info(fmt.Sprintf("%s is signalled to exit by force.", r.h.Handler))
	}
	r.cancel(r.reason)
}

// escalate cancels a runner that did not exit within the backoff, and
// abandons one that did not exit within the timeout after that: a
// goroutine cannot be killed, so an abandoned daemon keeps running until
// it returns, but it no longer blocks its object's deletion.
func (r *runner) escalate(backoff, timeout time.Duration) {
	defer r.sup.wg.Done()
	if backoff > 0 {
		if !r.waitDone(backoff) {
			return
		}
		r.sup.mu.Lock()
		r.cancelLocked()
		r.escalating = timeout > 0
		r.sup.mu.Unlock()
	}
	if timeout > 0 {
		if !r.waitDone(timeout) {
			return
		}
		r.sup.mu.Lock()
		r.reason |= StopAbandoned
		r.abandoned = true
		r.escalating = false
		// A vanished object has no deletion to unblock: it is not
		// reconciled again, as when its runners exit.
		enqueue := !r.sup.closing && !r.sup.paused && !r.obj.gone
		r.sup.mu.Unlock()
		r.sup.settings.Local(r.log).Info(fmt.Sprintf("%s did not exit in time. Leaving it orphaned.", r.h.Handler),
			"reason", r.stopReason().String())
		r.sup.notify()
		if enqueue {
			r.obj.host.Enqueue(r.obj.ref) // the deletion need not wait for it any more
		}
	}
}

// waitDone waits for the duration and reports true, or false if the
// runner exits first.
func (r *runner) waitDone(d time.Duration) bool {
	t := r.sup.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return true
	case <-r.done:
		return false
	}
}
