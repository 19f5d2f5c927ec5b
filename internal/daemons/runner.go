package daemons

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"

	"github.com/kopf-go/kopf/internal/causes"
	"github.com/kopf-go/kopf/internal/contain"
	"github.com/kopf-go/kopf/internal/execution"
)

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

// StopReason reads the reasons so far under the lock: the function's cause
// and the log lines ask for them from other goroutines than the stopper.
func (r *runner) StopReason() StopReason {
	r.sup.mu.Lock()
	defer r.sup.mu.Unlock()
	return r.reason
}

// Body is the object as a map; nil if it cannot be made, which is
// logged.
func (r *runner) Body(obj causes.Object) map[string]any {
	body, err := r.obj.host.Body(obj)
	if err != nil {
		r.log.Error(err, "The object cannot be read as a map.")
		return nil
	}
	return body
}

// Stopped, with Body, StopReason, Sleep and Latest, runs the daemon's
// cause (cause.DaemonRun).
func (r *runner) Stopped() <-chan struct{} { return r.stopped }

// Sleep is sleep, for the daemon's cause.
func (r *runner) Sleep(ctx context.Context, d time.Duration) bool { return r.sleep(ctx, d) }

// Latest reads the object afresh.
func (r *runner) Latest(ctx context.Context) (causes.Object, error) {
	obj, err := r.obj.host.Fetch(ctx, r.obj.ref)
	if err != nil {
		return nil, fmt.Errorf("read the latest %s: %w", r.obj.ref, err)
	}
	return obj, nil
}

// isStopped reports whether the runner was asked to stop, without waiting.
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
// after the default backoff if it cannot be read; false if stopped, or if
// the delay function panicked: the handler then ends for the object, as
// Kopf's does when its initial delay callable raises (not restarted).
func (r *runner) initialDelay() bool {
	for {
		obj, err := r.obj.host.Fetch(r.ctx, r.obj.ref)
		if err == nil {
			delay, p := contain.Value(func() time.Duration { return r.h.InitialDelay(obj) })
			if p != nil {
				r.log.Error(p, fmt.Sprintf("%s failed with an exception in its initial delay and will not be retried or restarted: %s", r.h.Handler, p),
					"stack", string(p.Stack))
				r.sup.settings.Observer.DelayPanicked(r.obj.host, &r.h)
				return false
			}
			return r.sleep(r.ctx, delay)
		}
		r.log.Error(err, fmt.Sprintf("%s cannot read its object for the initial delay; trying again later.", r.h.Handler))
		if !r.sleep(r.ctx, r.sup.settings.DefaultBackoff) {
			return false
		}
	}
}

// logExit says how the runner ended, so that the log tells a requested
// stop from a function that returned on its own.
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
