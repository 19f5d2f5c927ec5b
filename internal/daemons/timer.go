package daemons

import (
	"time"

	"github.com/kopf-go/kopf/internal/execution"
)

// idleLeft is how much longer the essence must stay unchanged before an
// idle timer may tick; changes reset the count.
func (o *object) idleLeft(idle time.Duration) time.Duration {
	o.sup.mu.Lock()
	defer o.sup.mu.Unlock()
	return o.idleReset.Add(idle).Sub(o.sup.clock.Now())
}

// idleResetAfter reports whether the essence changed after t: an idle-only
// timer ticks again only after such a change.
func (o *object) idleResetAfter(t time.Time) bool {
	o.sup.mu.Lock()
	defer o.sup.mu.Unlock()
	return o.idleReset.After(t)
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
