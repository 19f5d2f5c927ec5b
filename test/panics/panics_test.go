package panics

import (
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/kopf-go/kopf/test/testenv"
)

// TestCallbackPanicsAreContained runs one operator with every kind of
// callback (handlers, their filters, daemons' initial delays, a progress
// storage and a client wrapper of its own, operator-wide handlers), each
// panicking for the objects of its case, and one case
// after the other: an object that makes the callback panic, then a plain
// object, which must still be handled. Each panic is logged at error
// level with the callback's stack, naming the handler (and the object),
// and counted on /metrics; the operator never exits. Login and startup
// panic on their first attempt, which is retried; the probe panics on
// every call (the liveness endpoint fails); cleanup panics on its first
// attempt at the stop, which is retried, and the operator exits with 0.
func TestCallbackPanicsAreContained(t *testing.T) {
	ns := env.Namespace(t)
	gate := filepath.Join(t.TempDir(), "cleanup-gate")
	liveness := testenv.FreeAddress(t)
	op := startOperator(t, ns, []string{"--cleanup-gate=" + gate}, "--liveness=http://"+liveness+"/healthz")

	t.Run("login and startup", func(t *testing.T) {
		op.panicLogged(t, "Activity 'login' failed with an exception and will try again in 1 seconds: panic: login is broken", "")
		op.panicLogged(t, "Activity 'startup' failed with an exception and will try again in 1 seconds: panic: startup is broken", "")
		plain := example(ns, "plain-start", "")
		testenv.Create(t, env.Client, plain)
		op.served(t, plain)
		op.panicCounted(t, "login", "login")
		op.panicCounted(t, "startup", "startup")
	})

	cases := []struct {
		name     string
		callback string
		handler  string
		// line is the log line's message, for the object trigger-<name>;
		// unnamed: the line does not name the object.
		line    string
		unnamed bool
	}{
		{name: "change", callback: "change", handler: "create",
			line: "Handler 'create' failed with an exception and will try again in 1 seconds: panic: change of trigger-change is broken"},
		{name: "change-filter", callback: "filter", handler: "create_when",
			line: "Handler 'create_when' does not match: its filter panicked: panic: change-filter of trigger-change-filter is broken"},
		{name: "event", callback: "event", handler: "event",
			line: "Handler 'event' failed with an exception and will ignore it: panic: event of trigger-event is broken"},
		{name: "event-filter", callback: "filter", handler: "event_when",
			line: "Handler 'event_when' does not match: its filter panicked: panic: event-filter of trigger-event-filter is broken"},
		{name: "index", callback: "index", handler: "index",
			line: "Indexer 'index' failed with an exception and will ignore it: panic: index of trigger-index is broken"},
		{name: "index-filter", callback: "filter", handler: "index_when",
			line: "Indexer 'index_when' does not match: its filter panicked: panic: index-filter of trigger-index-filter is broken"},
		{name: "daemon", callback: "daemon", handler: "daemon",
			line: "Daemon 'daemon' failed with an exception and will try again in 1 seconds: panic: daemon of trigger-daemon is broken"},
		{name: "daemon-filter", callback: "filter", handler: "daemon_when",
			line: "Daemon 'daemon_when' does not match: its filter panicked: panic: daemon-filter of trigger-daemon-filter is broken"},
		{name: "delay", callback: "delay", handler: "delayed",
			line: "Daemon 'delayed' failed with an exception in its initial delay and will not be retried or restarted: panic: delay of trigger-delay is broken"},
		{name: "timer", callback: "timer", handler: "timer",
			line: "Timer 'timer' failed with an exception and will try again in 1 seconds: panic: timer of trigger-timer is broken"},
		// A filter function of a label, rather than When.
		{name: "timer-filter", callback: "filter", handler: "timer_when",
			line: "Timer 'timer_when' does not match: its filter panicked: panic: timer-filter is broken"},
		// The operator's progress storage: the object's cycle ends, and
		// the object is throttled.
		{name: "storage", callback: "storage", handler: "progress",
			line: "The cycle has ended: ProgressStorage.Store panicked: storage of trigger-storage is broken"},
		// The operator's wrapper of the engine's client: the write fails.
		{name: "client", callback: "client", handler: "", unnamed: true,
			line: "The client's wrapper (WrapClient) panicked in Patch: panic: client of trigger-client is broken"},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			trigger := example(ns, "trigger-"+tt.name, tt.name)
			testenv.Create(t, env.Client, trigger)
			name := trigger.GetName()
			if tt.unnamed {
				name = ""
			}
			op.panicLogged(t, tt.line, name)
			op.panicCounted(t, tt.callback, tt.handler)
			plain := example(ns, "plain-"+tt.name, "")
			testenv.Create(t, env.Client, plain)
			op.served(t, plain)
			if op.Exited() {
				t.Fatalf("the operator exited: %v", op.Err())
			}
		})
	}

	t.Run("probe", func(t *testing.T) {
		op.waitFor(t, "the liveness endpoint fails", func() bool {
			resp, err := http.Get("http://" + liveness + "/healthz")
			if err != nil {
				return false
			}
			_ = resp.Body.Close()
			return resp.StatusCode == http.StatusInternalServerError
		})
		op.panicLogged(t, "Activity 'probe' failed with an exception and will stop now: panic: probe is broken", "")
		op.panicCounted(t, "probe", "probe")
		plain := example(ns, "plain-probe", "")
		testenv.Create(t, env.Client, plain)
		op.served(t, plain)
	})

	t.Run("cleanup", func(t *testing.T) {
		if err := syscall.Kill(op.Pid(), syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		op.panicLogged(t, "Activity 'cleanup' failed with an exception and will try again in 1 seconds: panic: cleanup is broken", "")
		// The second attempt waits for the gate: the metrics are served
		// meanwhile (the metrics server stops last).
		op.panicCounted(t, "cleanup", "cleanup")
		if err := os.WriteFile(gate, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		op.waitFor(t, "the operator exits", op.Exited)
		if err := op.Err(); err != nil {
			t.Errorf("the operator's exit: %v", err)
		}
		for _, l := range op.lines() {
			if l.Msg == "The cleanup handlers failed." {
				t.Errorf("the cleanup handlers failed: their retry did not succeed")
			}
		}
	})
}
