package daemons

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestGoneStopsAndForgets checks that a vanished object's runners are
// stopped without reconciling it, and that the object is forgotten once
// they have exited: a new Sync starts from scratch.
func TestGoneStopsAndForgets(t *testing.T) {
	h := newHarness(t, Settings{})
	x, y := h.daemon("x", Spec{}), h.daemon("y", Spec{})
	h.sync(x, y)
	calls := map[string]*call{}
	for range 2 {
		c := h.next()
		calls[c.ID] = c
	}
	calls["x"].ret(nil, nil) // x ends on its own
	h.enqueued(1)
	if !h.sup.ForeverStopped(ref.UID, "x") {
		t.Fatalf("x is not forever stopped")
	}
	calls["y"].do(untilCancelled)

	h.sup.Gone(ref.UID)
	if diff := cmp.Diff("RESOURCE_DELETED|DAEMON_CANCELLED", stopCause(calls["y"].ctx).String()); diff != "" {
		t.Errorf("y's cause (-want +got):\n%s", diff)
	}
	h.eventually("the object to be forgotten", func() bool { return !h.known(ref.UID) })
	if h.sup.ForeverStopped(ref.UID, "x") {
		t.Errorf("x is still forever stopped for a forgotten object")
	}

	h.sync(x, y)
	for range 2 {
		c := h.next()
		if c.Retry != 0 {
			t.Errorf("%s's Retry = %d after a fresh start", c.ID, c.Retry)
		}
		c.do(untilCancelled)
	}
	h.stop()
	if got := len(h.host.Enqueued()); got != 1 {
		t.Errorf("%d reconcile requests; want only the one of x's own exit", got)
	}
}

// TestGoneWithAbandonedDaemon checks that abandoning a vanished object's
// daemon does not reconcile the object either.
func TestGoneWithAbandonedDaemon(t *testing.T) {
	h := newHarness(t, Settings{})
	h.sync(h.daemon("x", Spec{CancellationTimeout: 2 * time.Second}))
	c := h.next()
	c.do(h.stubborn)
	h.sup.Gone(ref.UID)
	h.waiters(1)
	h.clock.Step(2 * time.Second)
	h.eventually("the abandonment", func() bool { return c.d.StopReason()&StopAbandoned != 0 })
	if !h.known(ref.UID) {
		t.Errorf("the object is forgotten while its daemon still runs")
	}
	h.stop() // the daemon is released and exits
	if got := h.host.Enqueued(); len(got) != 0 {
		t.Errorf("enqueued %v for a vanished object", got)
	}
	if h.known(ref.UID) {
		t.Errorf("the object is remembered after its daemon exited")
	}
}

func TestGoneWithoutRunners(t *testing.T) {
	h := newHarness(t, Settings{})
	x := h.daemon("x", Spec{})
	h.sync(x)
	h.next().ret(nil, nil)
	h.exited(ref.UID)
	h.sup.Gone("unknown") // nothing happens
	if !h.sup.ForeverStopped(ref.UID, "x") {
		t.Fatalf("x is not forever stopped")
	}
	h.sup.Gone(ref.UID)
	if h.known(ref.UID) || h.sup.ForeverStopped(ref.UID, "x") {
		t.Errorf("an object without runners is remembered after Gone")
	}
}
