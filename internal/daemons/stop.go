package daemons

import (
	"fmt"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Blocking is what holds up an object's deletion: its daemons and timers
// that still run and are not abandoned.
type Blocking struct {
	// Names of the runners, sorted.
	Names []string
	// Lingering are those that were asked to stop before this call and
	// have no backoff or timeout running any more: they are "still
	// exiting", for as long as they like.
	Lingering []string
	// Polling is the shortest re-check interval among them.
	Polling time.Duration
	// Abandoned are those that were given up on after their cancellation
	// timeout but still run: they hold up nothing that Kopf waits for,
	// but an object is not handed over to another replica while they run.
	Abandoned []string
}

// Stop asks all daemons and timers of the object to stop for the reason,
// and says which still hold up its deletion.
func (s *Supervisor) Stop(uid types.UID, reason StopReason) Blocking {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b Blocking
	o, ok := s.objects[uid]
	if !ok {
		return b
	}
	for _, r := range o.runners {
		wasStopping := !r.stopSince.IsZero()
		r.stop(reason)
		if r.abandoned {
			b.Abandoned = append(b.Abandoned, r.h.Handler.String())
			continue
		}
		b.Names = append(b.Names, r.h.Handler.String())
		if wasStopping && !r.escalating {
			b.Lingering = append(b.Lingering, r.h.Handler.String())
		}
		if b.Polling == 0 || r.h.polling() < b.Polling {
			b.Polling = r.h.polling()
		}
	}
	sort.Strings(b.Names)
	sort.Strings(b.Lingering)
	sort.Strings(b.Abandoned)
	return b
}

// Gone stops everything of an object that no longer exists and forgets the
// object once its runners have exited.
func (s *Supervisor) Gone(uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.objects[uid]
	if !ok {
		return
	}
	o.gone = true
	for _, r := range o.runners {
		r.stop(StopResourceDeleted)
	}
	if len(o.runners) == 0 {
		delete(s.objects, uid)
	}
}

// Pause stops every daemon and timer with OPERATOR_PAUSING, for a freeze:
// they are not ended for good, and start again after it (the listing that
// follows a freeze reconciles every object). Nothing is spawned meanwhile.
func (s *Supervisor) Pause() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.paused = true
	for _, o := range s.objects {
		for _, r := range o.runners {
			r.stop(StopOperatorPausing)
		}
	}
}

// Fence cancels the context of every daemon and timer at once, without
// the cancellation backoff of a graceful stop, and spawns nothing from
// then on: the replica has lost its ring membership, and others may take
// its objects over once the margin of their lease is over (sharding.md).
// The runners still exit on their own, and the shutdown still waits for
// them and says which it leaves behind.
func (s *Supervisor) Fence() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closing = true
	for _, o := range s.objects {
		for _, r := range o.runners {
			r.stop(StopOperatorExiting)
			if r.reason&StopCancelled == 0 {
				r.cancelLocked()
			}
		}
	}
}

// Idle reports whether no daemon, timer or tracked handler runs any more,
// abandoned ones included: only then may a ring member give up its Lease
// (a goroutine that still runs could still act on an object that the ring
// would give to another member at once).
func (s *Supervisor) Idle() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.inflight) > 0 {
		return false
	}
	for _, o := range s.objects {
		if len(o.runners) > 0 {
			return false
		}
	}
	return true
}

// Resume lets daemons and timers be spawned again after a freeze.
func (s *Supervisor) Resume() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.paused = false
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
	backoff, timeout := r.h.CancellationBackoff, r.h.CancellationTimeout
	if r.h.Kind == KindTimer {
		backoff, timeout = 0, 0 // timers wake from their sleeps at once
	}
	// The line that says how the runner is asked to stop comes before
	// Stopped is closed: a daemon that watches Stopped may exit, and log
	// that it did, at once.
	if backoff > 0 {
		r.reason |= StopSignalled
		r.sup.settings.Local(r.log).V(1).Info(fmt.Sprintf("%s is signalled to exit gracefully.", r.h.Handler))
	} else {
		r.logForced()
	}
	close(r.stopped)
	r.sup.settings.Observer.Stopping(r.obj.host, &r.h)
	if backoff == 0 {
		r.cancelLocked()
	}
	if backoff > 0 || timeout > 0 {
		r.escalating = true
		r.sup.wg.Add(1)
		go r.escalate(backoff, timeout)
	}
}

// logForced says that a daemon's context is about to be cancelled. Timers
// are not forced: their sleeps end, and a tick in progress learns from its
// context, as usual.
func (r *runner) logForced() {
	if r.h.Kind == KindDaemon {
		r.sup.settings.Local(r.log).V(1).Info(fmt.Sprintf("%s is signalled to exit by force.", r.h.Handler))
	}
}

// cancelLocked cancels the runner's context with its reasons (the caller
// holds sup.mu), so that the function sees why it is stopped.
func (r *runner) cancelLocked() {
	r.reason |= StopCancelled
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
		r.logForced()
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
			"reason", r.StopReason().String())
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
