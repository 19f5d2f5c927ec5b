package daemons

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kopf-go/kopf/internal/causes"
)

// TestInitialDelayPanic: a daemon or timer whose initial delay function
// panics ends for the object, as Kopf's does when the callable raises: it
// is logged at error with its stack, the handler is never called, it is
// not spawned again while the object lives, and it no longer needs the
// finalizer; the object's other daemons are not touched.
func TestInitialDelayPanic(t *testing.T) {
	for _, kind := range []Kind{KindDaemon, KindTimer} {
		t.Run(map[Kind]string{KindDaemon: "daemon", KindTimer: "timer"}[kind], func(t *testing.T) {
			h := newHarness(t, Settings{})
			spec := Spec{Interval: time.Second, InitialDelay: func(causes.Object) time.Duration { panic("no delay today") }}
			broken := h.daemon("broken", spec)
			if kind == KindTimer {
				broken = h.timer("broken", spec)
			}
			h.sync(broken, h.daemon("fine", Spec{}))
			c := h.next()
			if c.ID != "fine" {
				t.Fatalf("%s was called, want only the other daemon", c.ID)
			}
			h.eventually("the broken one to exit", func() bool { return h.runner(ref.UID, "broken") == nil })
			title := map[Kind]string{KindDaemon: "Daemon", KindTimer: "Timer"}[kind]
			want := []string{title + " 'broken' failed with an exception in its initial delay and will not be retried or restarted: panic: no delay today"}
			if diff := cmp.Diff(want, h.logs.Stacked()); diff != "" {
				t.Errorf("the error lines with a stack -want +got:\n%s", diff)
			}
			if !h.sup.ForeverStopped(ref.UID, "broken") {
				t.Error("the handler is not stopped for good: it would run again")
			}
			h.sync(broken, h.daemon("fine", Spec{}))
			h.noCall()
			if diff := cmp.Diff([]string{"fine"}, h.running(ref.UID)); diff != "" {
				t.Errorf("running -want +got:\n%s", diff)
			}
			c.do(untilCancelled)
		})
	}
}
