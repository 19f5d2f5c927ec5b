package daemons

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kopf-go/kopf/internal/causes"
	"github.com/kopf-go/kopf/internal/execution"
)

func after(d time.Duration) func(causes.Object) time.Duration {
	return func(causes.Object) time.Duration { return d }
}

// TestTimerSchedule checks when a timer's calls come, given how long each
// call takes; it also checks that each tick's result is written.
func TestTimerSchedule(t *testing.T) {
	s := time.Second
	tests := []struct {
		name   string
		spec   Spec
		takes  []time.Duration // how long each call runs
		wantAt []time.Duration // when each call comes, since the spawn
	}{
		{name: "interval: counted from the end of the previous call",
			spec:  Spec{Interval: 10 * s},
			takes: []time.Duration{3 * s, 0, 12 * s, 0}, wantAt: []time.Duration{0, 13 * s, 23 * s, 45 * s}},
		{name: "sharp: on the grid",
			spec:  Spec{Interval: 10 * s, Sharp: true},
			takes: []time.Duration{3 * s, 0, 12 * s, 0}, wantAt: []time.Duration{0, 10 * s, 20 * s, 40 * s}},
		{name: "sharp: a call of exactly one interval",
			spec:  Spec{Interval: 10 * s, Sharp: true},
			takes: []time.Duration{10 * s, 0}, wantAt: []time.Duration{0, 20 * s}},
		{name: "sharp: a long call never overlaps the next",
			spec:  Spec{Interval: 10 * s, Sharp: true},
			takes: []time.Duration{35 * s, 0}, wantAt: []time.Duration{0, 40 * s}},
		{name: "interval: a long call never overlaps the next",
			spec:  Spec{Interval: 10 * s},
			takes: []time.Duration{35 * s, 0}, wantAt: []time.Duration{0, 45 * s}},
		{name: "initial delay, then the interval",
			spec:  Spec{Interval: 10 * s, InitialDelay: after(7 * s)},
			takes: []time.Duration{3 * s, 0}, wantAt: []time.Duration{7 * s, 20 * s}},
		{name: "initial delay, then the sharp grid from the first call",
			spec:  Spec{Interval: 10 * s, Sharp: true, InitialDelay: after(5 * s)},
			takes: []time.Duration{3 * s, 0}, wantAt: []time.Duration{5 * s, 15 * s}},
		{name: "one-shot with an initial delay",
			spec:  Spec{InitialDelay: after(5 * s)},
			takes: []time.Duration{0}, wantAt: []time.Duration{5 * s}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, Settings{})
			h.sync(h.timer("t", tt.spec))
			var want []map[string]any
			for i, at := range tt.wantAt {
				c := h.callAt(at)
				if c.Retry != 0 || !c.Started.Equal(c.At) {
					t.Errorf("call %d: Retry %d, Started +%s; want 0 and its own start", i, c.Retry, h.since(c.Started))
				}
				if tt.takes[i] > 0 {
					h.clock.Step(tt.takes[i])
					h.settle(0) // the call itself blocks, and nothing else runs
				}
				c.ret(map[string]any{"tick": i}, nil)
				want = append(want, map[string]any{"status": map[string]any{"t": map[string]any{"tick": float64(i)}}})
				h.eventually("the tick's patch", func() bool { return len(h.host.Applied()) == i+1 })
			}
			if diff := cmp.Diff(want, h.host.Applied()); diff != "" {
				t.Errorf("applied patches (-want +got):\n%s", diff)
			}
		})
	}
}

// TestTimerOneShot checks that a timer with neither an interval nor an
// idle time is called once and then ends for good.
func TestTimerOneShot(t *testing.T) {
	h := newHarness(t, Settings{})
	x := h.timer("t", Spec{})
	h.sync(x)
	h.next().ret("once", nil)
	h.exited(ref.UID)
	h.enqueued(1)
	if !h.sup.ForeverStopped(ref.UID, "t") {
		t.Errorf("a one-shot timer is not forever stopped")
	}
	h.sync(x)
	if got := h.running(ref.UID); len(got) != 0 {
		t.Errorf("a one-shot timer was spawned again: %v", got)
	}
	if diff := cmp.Diff([]map[string]any{{"status": map[string]any{"t": "once"}}}, h.host.Applied()); diff != "" {
		t.Errorf("applied patches (-want +got):\n%s", diff)
	}
}

// TestTimerIdle checks that a timer with an idle time waits until the
// essence has not changed for that long, and that an idle-only timer
// waits for another change after each call.
func TestTimerIdle(t *testing.T) {
	s := time.Second
	h := newHarness(t, Settings{})
	x := h.timer("t", Spec{Idle: 10 * s})
	h.sync(x) // the spawn counts as a change
	h.waiters(1)
	h.clock.Step(5 * s)
	h.settle(1)
	h.essence = 2
	h.sync(x) // a change at +5s: no call before +15s
	h.clock.Step(5 * s)
	h.settle(1)
	h.clock.Step(2 * s)
	h.settle(1)
	h.sync(x) // the same essence at +12s changes nothing
	c := h.callAt(15 * s)
	c.ret(nil, nil)

	// Idle-only: no call without another change, however long it idles.
	h.waiters(1)
	h.clock.Step(10 * s)
	h.settle(1)
	h.clock.Step(30 * s)
	h.settle(1)
	h.clock.Step(3 * s)
	h.settle(1)
	h.essence = 3
	h.sync(x) // a change at +58s: the next call at +68s
	h.callAt(68*s).ret(nil, nil)
}

// TestTimerIdleWithInterval checks that a timer with both an idle time and
// an interval keeps ticking while the object idles, and waits for the
// idle time again after a change.
func TestTimerIdleWithInterval(t *testing.T) {
	s := time.Second
	h := newHarness(t, Settings{})
	x := h.timer("t", Spec{Idle: 10 * s, Interval: 4 * s})
	h.sync(x)
	h.callAt(10*s).ret(nil, nil)
	h.callAt(14*s).ret(nil, nil)
	h.waiters(1)
	h.clock.Step(2 * s)
	h.settle(1)
	h.essence = 2
	h.sync(x) // a change at +16s
	h.callAt(26*s).ret(nil, nil)
	h.callAt(30*s).ret(nil, nil)
}

// TestTimerErrors checks how a tick's failure affects the next tick: a
// permanent one does not stop the timer (as in Kopf's code), retries
// come after the delay with Retry+1, and a success starts afresh.
func TestTimerErrors(t *testing.T) {
	s := time.Second
	type tick struct {
		At      time.Duration
		Retry   int
		Started time.Duration
	}
	type step struct {
		want tick
		err  error // what the call returns
	}
	tests := []struct {
		name    string
		retries int
		steps   []step
	}{
		{name: "a permanent error does not stop the timer", steps: []step{
			{tick{0, 0, 0}, execution.NewPermanentError("no")},
			{tick{10 * s, 0, 10 * s}, execution.NewPermanentError("no")},
			{tick{20 * s, 0, 20 * s}, nil},
		}},
		{name: "a temporary error retries after its delay", steps: []step{
			{tick{0, 0, 0}, execution.NewTemporaryError("later", 3*s)},
			{tick{3 * s, 1, 0}, execution.NewTemporaryError("later", 3*s)},
			{tick{6 * s, 2, 0}, nil},
			{tick{16 * s, 0, 16 * s}, nil},
		}},
		{name: "an arbitrary error retries after the backoff", steps: []step{
			{tick{0, 0, 0}, errors.New("boom")},
			{tick{7 * s, 1, 0}, nil},
			{tick{17 * s, 0, 17 * s}, nil},
		}},
		{name: "used-up retries end the tick, not the timer", retries: 2, steps: []step{
			{tick{0, 0, 0}, execution.NewTemporaryError("later", 3*s)},
			{tick{3 * s, 1, 0}, execution.NewTemporaryError("later", 3*s)},
			{tick{13 * s, 0, 13 * s}, nil},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, Settings{DefaultBackoff: 7 * s})
			x := h.timer("t", Spec{Interval: 10 * s})
			x.Retries = tt.retries
			h.sync(x)
			for _, st := range tt.steps {
				c := h.callAt(st.want.At)
				got := tick{At: h.since(c.At), Retry: c.Retry, Started: h.since(c.Started)}
				if diff := cmp.Diff(st.want, got); diff != "" {
					t.Errorf("tick (-want +got):\n%s", diff)
				}
				c.ret(nil, st.err)
			}
			if h.sup.ForeverStopped(ref.UID, "t") {
				t.Errorf("the timer is forever stopped")
			}
		})
	}
}

// TestTimerStopsAtOnce checks that a sleeping timer exits as soon as it is
// stopped, whatever its cancellation settings.
func TestTimerStopsAtOnce(t *testing.T) {
	h := newHarness(t, Settings{})
	h.sync(h.timer("t", Spec{Interval: time.Hour, CancellationBackoff: time.Minute, CancellationTimeout: time.Minute}))
	h.next().ret(nil, nil)
	h.waiters(1)
	blocking := h.sup.Stop(ref.UID, StopResourceDeleted).Names
	if diff := cmp.Diff([]string{"Timer 't'"}, blocking); diff != "" {
		t.Errorf("blocking (-want +got):\n%s", diff)
	}
	h.exited(ref.UID)
	h.waiters(0)
	h.enqueued(1)
	if h.sup.ForeverStopped(ref.UID, "t") {
		t.Errorf("a stopped timer is forever stopped")
	}
}
