package daemons

import (
	"context"
	"testing"
	"time"
)

// A fence cancels every daemon's context at once, even one with a
// cancellation backoff (a graceful stop would only signal it first), and
// spawns nothing afterwards; Idle tells when nothing runs any more.
func TestFenceCancelsAtOnce(t *testing.T) {
	h := newHarness(t, Settings{})
	patient := h.daemon("patient", Spec{CancellationBackoff: time.Minute, CancellationTimeout: time.Minute})
	plain := h.daemon("plain", Spec{})
	h.sync(patient, plain)
	calls := map[string]*call{}
	for range 2 {
		c := h.next()
		calls[c.ID] = c
		c.do(untilCancelled)
	}
	if h.sup.Idle() {
		t.Fatal("Idle() while two daemons run")
	}

	h.sup.Fence()
	for id, c := range calls {
		select {
		case <-c.ctx.Done():
		case <-time.After(patience):
			t.Fatalf("%s's context is not cancelled by the fence", id)
		}
		if got := stopCause(c.ctx); got&StopOperatorExiting == 0 || got&StopCancelled == 0 {
			t.Errorf("%s's cause = %s, want OPERATOR_EXITING and DAEMON_CANCELLED", id, got)
		}
	}
	h.exited(ref.UID)
	if !h.sup.Idle() {
		t.Error("not Idle() once every daemon has exited")
	}
	h.sync(patient, plain)
	h.noCall()
	if got := h.running(ref.UID); len(got) != 0 {
		t.Errorf("spawned %v after the fence", got)
	}
}

// A daemon that ignores its cancellation keeps the supervisor from being
// Idle, abandoned or not: it still runs.
func TestIdleWaitsForStubbornDaemons(t *testing.T) {
	h := newHarness(t, Settings{})
	h.sync(h.daemon("x", Spec{CancellationTimeout: time.Second}))
	c := h.next()
	c.do(h.stubborn)
	h.sup.Fence()
	h.waiters(1)
	h.clock.Step(time.Second)
	h.eventually("the abandonment", func() bool { return c.d.StopReason()&StopAbandoned != 0 })
	if h.sup.Idle() {
		t.Error("Idle() while an abandoned daemon still runs")
	}
	h.release()
	h.exited(ref.UID)
	if !h.sup.Idle() {
		t.Error("not Idle() once the abandoned daemon has exited")
	}
}

// An object that comes back while its daemons are stopping (it left a
// ring member's cache and re-entered it) is not gone any more: the exit of
// its daemons asks for the reconcile that spawns them again.
func TestObjectComesBackWhileItsDaemonsStop(t *testing.T) {
	h := newHarness(t, Settings{})
	x := h.daemon("x", Spec{})
	h.sync(x)
	c := h.next()
	stopped := make(chan struct{})
	c.do(func(ctx context.Context, d *DaemonCause) (any, error) {
		<-ctx.Done()
		<-stopped // slow to honour its cancellation
		return nil, ctx.Err()
	})
	h.sup.Gone(ref.UID)
	h.sync(x) // back, while x still stops
	h.noCall()
	close(stopped)
	h.enqueued(1)
	h.sync(x)
	h.next().do(untilCancelled)
}
