package daemons

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// waitStart waits until the supervisor's Start has returned.
func (h *harness) waitStart() {
	h.t.Helper()
	select {
	case <-h.startDone:
	case <-time.After(patience):
		h.t.Fatalf("Start did not return")
	}
}

// shutdownLines are the supervisor's own lines about its shutdown.
func (h *harness) shutdownLines() []logLine {
	var out []logLine
	for _, l := range h.logs.All() {
		if strings.HasPrefix(l.Msg, "The operator is stopping") || strings.HasPrefix(l.Msg, "The operator stops") {
			out = append(out, l)
		}
	}
	return out
}

// TestShutdownStopsEverything checks that the operator's stop stops every
// daemon and timer of every object with OPERATOR_EXITING, and that Start
// returns once they have exited, without reconciling anything.
func TestShutdownStopsEverything(t *testing.T) {
	h := newHarness(t, Settings{ShutdownGrace: time.Hour, ReportInterval: 2 * time.Hour})
	other := Ref{UID: "uid-2", Namespace: "ns", Name: "other"}
	h.sync(h.daemon("x", Spec{}))
	h.sup.Sync(other, h.host, h.logFor, []Handler{h.daemon("x", Spec{CancellationBackoff: time.Minute}), h.timer("t", Spec{Interval: time.Hour})}, 1, nil, nil)
	var daemons []*call
	for range 3 {
		c := h.next()
		if c.ID == "t" {
			c.ret(nil, nil) // the timer sleeps
			continue
		}
		c.do(untilCancelled)
		daemons = append(daemons, c)
	}
	h.waiters(1) // the timer's interval
	select {
	case <-h.sup.Done():
		t.Fatalf("Done is closed before the shutdown")
	default:
	}
	h.cancel()
	h.eventually("the timer's exit", func() bool { return h.runner(other.UID, "t") == nil })
	h.waiters(3) // the backoff, the grace, and the report ticker
	h.clock.Step(time.Minute)
	h.waitStart()
	got := map[string]string{}
	for _, c := range daemons {
		got[c.Obj.GetName()] = stopCause(c.ctx).String()
	}
	want := map[string]string{
		"name":  "OPERATOR_EXITING|DAEMON_CANCELLED",
		"other": "OPERATOR_EXITING|DAEMON_SIGNALLED|DAEMON_CANCELLED",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("causes by object (-want +got):\n%s", diff)
	}
	if got := h.host.Enqueued(); len(got) != 0 {
		t.Errorf("enqueued %v during the shutdown", got)
	}
	select {
	case <-h.sup.Done():
	default:
		t.Errorf("Done is not closed after the shutdown")
	}
	if diff := cmp.Diff([]logLine(nil), h.shutdownLines()); diff != "" {
		t.Errorf("shutdown lines (-want +got):\n%s", diff)
	}
}

// TestShutdownWaitsAndReports checks that the shutdown waits for tracked
// change handlers, names what it waits for every report interval, and
// spawns nothing new meanwhile.
func TestShutdownWaitsAndReports(t *testing.T) {
	h := newHarness(t, Settings{ReportInterval: 5 * time.Second, ShutdownGrace: time.Hour})
	h.sync(h.daemon("x", Spec{}))
	c := h.next()
	c.do(h.stubborn)
	done := h.sup.Track("Handler 'create_fn' of ns/name")
	h.clock.Step(2 * time.Second)
	h.cancel()
	h.waiters(2) // the grace and the report ticker: the shutdown has begun
	h.sync(h.daemon("x", Spec{}), h.daemon("late", Spec{}))
	if diff := cmp.Diff([]string{"x"}, h.running(ref.UID)); diff != "" {
		t.Errorf("runners after the shutdown began (-want +got):\n%s", diff)
	}

	h.clock.Step(5 * time.Second)
	first := logLine{Level: "info", Msg: "The operator is stopping; still waiting for 2: " +
		"Daemon 'x' of ns/name (stopping for 5s: OPERATOR_EXITING|DAEMON_CANCELLED), " +
		"Handler 'create_fn' of ns/name (running for 7s)."}
	h.eventually("the first report", func() bool { return len(h.shutdownLines()) == 1 })

	h.release() // the daemon exits; the handler still runs
	h.exited(ref.UID)
	h.clock.Step(5 * time.Second)
	second := logLine{Level: "info", Msg: "The operator is stopping; still waiting for 1: Handler 'create_fn' of ns/name (running for 12s)."}
	h.eventually("the second report", func() bool { return len(h.shutdownLines()) == 2 })
	select {
	case <-h.startDone:
		t.Fatalf("Start returned while a handler runs")
	default:
	}

	done()
	h.waitStart()
	if diff := cmp.Diff([]logLine{first, second}, h.shutdownLines()); diff != "" {
		t.Errorf("shutdown lines (-want +got):\n%s", diff)
	}
	h.noCall()
}

// TestShutdownGrace checks that the shutdown gives up after its grace,
// names what it leaves behind, and returns while a stubborn daemon runs.
func TestShutdownGrace(t *testing.T) {
	h := newHarness(t, Settings{ReportInterval: 5 * time.Second, ShutdownGrace: 12 * time.Second})
	h.sync(h.daemon("x", Spec{CancellationBackoff: 3 * time.Second}))
	c := h.next()
	c.do(h.stubborn)
	h.cancel()
	h.waiters(3) // the backoff, the grace, and the report ticker
	h.clock.Step(3 * time.Second)
	h.eventually("the cancellation", func() bool { return c.ctx.Err() != nil })
	h.waiters(2)
	h.clock.Step(2 * time.Second)
	h.eventually("the first report", func() bool { return len(h.shutdownLines()) == 1 })
	h.clock.Step(5 * time.Second)
	h.eventually("the second report", func() bool { return len(h.shutdownLines()) == 2 })
	h.clock.Step(2 * time.Second)
	h.waitStart()

	const what = "Daemon 'x' of ns/name (stopping for %s: OPERATOR_EXITING|DAEMON_SIGNALLED|DAEMON_CANCELLED)"
	want := []logLine{
		{Level: "info", Msg: "The operator is stopping; still waiting for 1: " + fmt.Sprintf(what, "5s") + "."},
		{Level: "info", Msg: "The operator is stopping; still waiting for 1: " + fmt.Sprintf(what, "10s") + "."},
		{Level: "error", Msg: "The operator stops without waiting any longer (12s); left running, since goroutines cannot be killed: " +
			fmt.Sprintf(what, "12s") + "."},
	}
	if diff := cmp.Diff(want, h.shutdownLines()); diff != "" {
		t.Errorf("shutdown lines (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"x"}, h.running(ref.UID)); diff != "" {
		t.Errorf("runners left behind (-want +got):\n%s", diff)
	}
	h.release() // so that the goroutine ends before the leak check
	h.exited(ref.UID)
}
