package daemons

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kopf-go/kopf/internal/causes"
	"github.com/kopf-go/kopf/internal/execution"
)

// stopped is what a test sees of a stopping daemon right after Stop.
type stopped struct {
	Blocking  []string
	Polling   time.Duration
	Signalled bool   // Stopped() is closed
	Cancelled bool   // the context is done
	Cause     string // the context's cause
	Reason    string // the daemon's StopReason()
}

func observe(c *call, blocking []string, polling time.Duration) stopped {
	s := stopped{Blocking: blocking, Polling: polling, Cancelled: c.ctx.Err() != nil,
		Cause: stopCause(c.ctx).String(), Reason: c.d.StopReason().String()}
	select {
	case <-c.d.Stopped():
		s.Signalled = true
	default:
	}
	return s
}

// TestStopCancelsAtOnce covers daemons without a backoff, and timers,
// which never get one: Stopped and the context end together, and a
// function that returns the context's error exits on request.
func TestStopCancelsAtOnce(t *testing.T) {
	tests := []struct {
		name     string
		h        func(h *harness) Handler
		wantName string
	}{
		{"daemon", func(h *harness) Handler { return h.daemon("x", Spec{}) }, "Daemon 'x'"},
		{"daemon with a timeout only", func(h *harness) Handler {
			return h.daemon("x", Spec{CancellationTimeout: time.Minute})
		}, "Daemon 'x'"},
		{"timer with a backoff and a timeout", func(h *harness) Handler {
			return h.timer("x", Spec{Interval: time.Minute, CancellationBackoff: time.Minute, CancellationTimeout: time.Minute})
		}, "Timer 'x'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, Settings{})
			h.sync(tt.h(h))
			c := h.next()
			got := observe(c, nil, 0)
			b := h.sup.Stop(ref.UID, StopResourceDeleted)
			got.Blocking, got.Polling = b.Names, b.Polling
			want := stopped{Blocking: []string{tt.wantName}, Polling: DefaultCancellationPolling, Signalled: true,
				Cancelled: true, Cause: "RESOURCE_DELETED|DAEMON_CANCELLED", Reason: "RESOURCE_DELETED|DAEMON_CANCELLED"}
			if diff := cmp.Diff(want, observe(c, got.Blocking, got.Polling)); diff != "" {
				t.Errorf("after Stop (-want +got):\n%s", diff)
			}
			if err := context.Cause(c.ctx); !errors.Is(err, StopResourceDeleted) || !errors.Is(err, StopCancelled) {
				t.Errorf("the cause %v does not match RESOURCE_DELETED and DAEMON_CANCELLED", err)
			}
			c.do(untilCancelled)
			h.exited(ref.UID)
			h.enqueued(1)
			if b := h.sup.Stop(ref.UID, StopResourceDeleted); b.Names != nil || b.Polling != 0 {
				t.Errorf("Stop after the exit = %v, %s; want nothing", b.Names, b.Polling)
			}
			if h.sup.ForeverStopped(ref.UID, "x") {
				t.Errorf("a stopped %s is forever stopped", tt.wantName)
			}
			wantLogs := []logLine{
				{Level: "info", Msg: tt.wantName + " is cancelled."},
				{Level: "debug", Msg: tt.wantName + " has exited on request and will not be retried or restarted."},
			}
			var gotLogs []logLine
			for _, l := range h.logs.All() {
				if l.Msg == wantLogs[0].Msg || l.Msg == wantLogs[1].Msg {
					gotLogs = append(gotLogs, l)
				}
			}
			if diff := cmp.Diff(wantLogs, gotLogs); diff != "" {
				t.Errorf("logs (-want +got):\n%s", diff)
			}
		})
	}
}

// TestStopBackoff checks that a daemon with a cancellation backoff is
// first only signalled, and cancelled when the backoff is over.
func TestStopBackoff(t *testing.T) {
	h := newHarness(t, Settings{})
	h.sync(h.daemon("x", Spec{CancellationBackoff: 5 * time.Second}))
	c := h.next()
	c.do(untilCancelled) // it ignores Stopped and waits for its context
	result := h.sup.Stop(ref.UID, StopResourceDeleted)
	blocking, polling := result.Names, result.Polling
	want := stopped{Blocking: []string{"Daemon 'x'"}, Polling: DefaultCancellationPolling, Signalled: true,
		Cause: "NONE", Reason: "RESOURCE_DELETED|DAEMON_SIGNALLED"}
	if diff := cmp.Diff(want, observe(c, blocking, polling)); diff != "" {
		t.Errorf("after Stop (-want +got):\n%s", diff)
	}
	h.waiters(1)
	h.clock.Step(5*time.Second - time.Millisecond)
	h.waiters(1)
	if c.ctx.Err() != nil {
		t.Fatalf("the context is cancelled before the backoff is over")
	}
	h.clock.Step(time.Millisecond)
	h.eventually("the cancellation", func() bool { return c.ctx.Err() != nil })
	want = stopped{Signalled: true, Cancelled: true,
		Cause: "RESOURCE_DELETED|DAEMON_SIGNALLED|DAEMON_CANCELLED", Reason: "RESOURCE_DELETED|DAEMON_SIGNALLED|DAEMON_CANCELLED"}
	if diff := cmp.Diff(want, observe(c, nil, 0)); diff != "" {
		t.Errorf("after the backoff (-want +got):\n%s", diff)
	}
	h.exited(ref.UID)
	h.enqueued(1)
	for _, msg := range []string{"Daemon 'x' is signalled to exit gracefully.", "Daemon 'x' is signalled to exit by force."} {
		if len(h.logs.Find(msg)) != 1 {
			t.Errorf("no log line %q", msg)
		}
	}
}

// TestStopPoliteDaemon checks that a daemon that exits when signalled is
// not cancelled, and that its last result is written.
func TestStopPoliteDaemon(t *testing.T) {
	h := newHarness(t, Settings{})
	h.sync(h.daemon("x", Spec{CancellationBackoff: 5 * time.Second, CancellationTimeout: 5 * time.Second}))
	c := h.next()
	c.do(func(ctx context.Context, d *DaemonCause) (any, error) {
		<-d.Stopped()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return map[string]any{"done": true}, nil
	})
	h.sup.Stop(ref.UID, StopResourceDeleted)
	h.exited(ref.UID)
	h.enqueued(1)
	if diff := cmp.Diff("RESOURCE_DELETED|DAEMON_SIGNALLED", c.d.StopReason().String()); diff != "" {
		t.Errorf("stop reason (-want +got):\n%s", diff)
	}
	want := []map[string]any{{"status": map[string]any{"x": map[string]any{"done": true}}}}
	if diff := cmp.Diff(want, h.host.Applied()); diff != "" {
		t.Errorf("applied patches (-want +got):\n%s", diff)
	}
	if h.sup.ForeverStopped(ref.UID, "x") {
		t.Errorf("a daemon that exited on request is forever stopped")
	}
}

// TestStopLogsBeforeSignalling checks that the line saying how a daemon is
// asked to stop is logged before Stopped is closed, so that it comes before
// anything the daemon logs as it exits.
func TestStopLogsBeforeSignalling(t *testing.T) {
	tests := []struct {
		name string
		spec Spec
		want string
	}{
		{"by force", Spec{}, "Daemon 'x' is signalled to exit by force."},
		{"gracefully", Spec{CancellationBackoff: time.Minute}, "Daemon 'x' is signalled to exit gracefully."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, Settings{})
			h.sync(h.daemon("x", tt.spec))
			c := h.next()
			logged := make(chan int, 1)
			c.do(func(ctx context.Context, d *DaemonCause) (any, error) {
				<-d.Stopped()
				logged <- len(h.logs.Find(tt.want))
				return nil, nil
			})
			h.sup.Stop(ref.UID, StopResourceDeleted)
			if diff := cmp.Diff(1, <-logged); diff != "" {
				t.Errorf("lines %q when Stopped is closed (-want +got):\n%s", tt.want, diff)
			}
			h.exited(ref.UID)
		})
	}
}

// TestStopTimeout checks that a daemon that ignores its context is
// abandoned after the backoff and the timeout: it no longer blocks the
// deletion, and its object is reconciled to notice that.
func TestStopTimeout(t *testing.T) {
	h := newHarness(t, Settings{})
	x := h.daemon("x", Spec{CancellationBackoff: time.Second, CancellationTimeout: 2 * time.Second})
	h.sync(x)
	c := h.next()
	c.do(h.stubborn)
	h.sup.Stop(ref.UID, StopResourceDeleted)
	h.waiters(1)
	h.clock.Step(time.Second)
	h.eventually("the cancellation", func() bool { return c.ctx.Err() != nil })
	h.waiters(1)
	h.clock.Step(2*time.Second - time.Millisecond)
	h.waiters(1)
	blocking := h.sup.Stop(ref.UID, StopResourceDeleted).Names
	if diff := cmp.Diff([]string{"Daemon 'x'"}, blocking); diff != "" {
		t.Errorf("blocking before the timeout (-want +got):\n%s", diff)
	}
	h.clock.Step(time.Millisecond)
	h.enqueued(1)
	result := h.sup.Stop(ref.UID, StopResourceDeleted)
	blocking, polling := result.Names, result.Polling
	want := stopped{Signalled: true, Cancelled: true, Cause: "RESOURCE_DELETED|DAEMON_SIGNALLED|DAEMON_CANCELLED",
		Reason: "RESOURCE_DELETED|DAEMON_SIGNALLED|DAEMON_CANCELLED|DAEMON_ABANDONED"}
	if diff := cmp.Diff(want, observe(c, blocking, polling)); diff != "" {
		t.Errorf("after the timeout (-want +got):\n%s", diff)
	}
	// It holds up no deletion, but it still runs: a handover waits for it.
	if diff := cmp.Diff([]string{"Daemon 'x'"}, result.Abandoned); diff != "" {
		t.Errorf("abandoned after the timeout (-want +got):\n%s", diff)
	}
	wantLog := []logLine{{Level: "info", Msg: "Daemon 'x' did not exit in time. Leaving it orphaned."}}
	if diff := cmp.Diff(wantLog, h.logs.Find("orphaned")); diff != "" {
		t.Errorf("log (-want +got):\n%s", diff)
	}
	// The abandoned daemon still runs, so it is not spawned twice.
	h.sync(x)
	if r := h.runner(ref.UID, "x"); r == nil || r.Stopped() != c.d.Stopped() {
		t.Errorf("the abandoned runner was replaced or forgotten")
	}
	h.release()
	h.exited(ref.UID)
	h.enqueued(2)
}

// TestStopWithoutTimeout checks that a daemon without a cancellation
// timeout blocks the deletion until it exits, however long that takes.
func TestStopWithoutTimeout(t *testing.T) {
	h := newHarness(t, Settings{})
	h.sync(h.daemon("x", Spec{CancellationBackoff: time.Second, CancellationPolling: 7 * time.Second}))
	c := h.next()
	c.do(h.stubborn)
	h.sup.Stop(ref.UID, StopResourceDeleted)
	h.waiters(1)
	h.clock.Step(time.Second)
	h.eventually("the cancellation", func() bool { return c.ctx.Err() != nil })
	h.waiters(0) // nothing escalates any further
	h.clock.Step(time.Hour)
	result := h.sup.Stop(ref.UID, StopResourceDeleted)
	blocking, polling := result.Names, result.Polling
	want := stopped{Blocking: []string{"Daemon 'x'"}, Polling: 7 * time.Second, Signalled: true, Cancelled: true,
		Cause: "RESOURCE_DELETED|DAEMON_SIGNALLED|DAEMON_CANCELLED", Reason: "RESOURCE_DELETED|DAEMON_SIGNALLED|DAEMON_CANCELLED"}
	if diff := cmp.Diff(want, observe(c, blocking, polling)); diff != "" {
		t.Errorf("an hour later (-want +got):\n%s", diff)
	}
	if got := h.host.Enqueued(); len(got) != 0 {
		t.Errorf("enqueued %v before the exit", got)
	}
	h.release()
	h.exited(ref.UID)
	h.enqueued(1)
	if b := h.sup.Stop(ref.UID, StopResourceDeleted); b.Names != nil || b.Polling != 0 {
		t.Errorf("Stop after the exit = %v, %s; want nothing", b.Names, b.Polling)
	}
}

func TestStopBlockingAndPolling(t *testing.T) {
	tests := []struct {
		name         string
		spawn        func(h *harness) []Handler
		uid          string
		wantBlocking []string
		wantPolling  time.Duration
	}{
		{name: "no such object", uid: "other", spawn: func(h *harness) []Handler { return []Handler{h.daemon("x", Spec{})} }},
		{name: "the default polling",
			spawn:        func(h *harness) []Handler { return []Handler{h.daemon("x", Spec{})} },
			wantBlocking: []string{"Daemon 'x'"}, wantPolling: 60 * time.Second},
		{name: "the handler's polling",
			spawn: func(h *harness) []Handler {
				return []Handler{h.daemon("x", Spec{CancellationPolling: 7 * time.Second})}
			},
			wantBlocking: []string{"Daemon 'x'"}, wantPolling: 7 * time.Second},
		{name: "the shortest polling of all, names sorted",
			spawn: func(h *harness) []Handler {
				return []Handler{h.timer("t", Spec{Interval: time.Hour}), h.daemon("b", Spec{CancellationPolling: 30 * time.Second}),
					h.daemon("a", Spec{})}
			},
			wantBlocking: []string{"Daemon 'a'", "Daemon 'b'", "Timer 't'"}, wantPolling: 30 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, Settings{})
			h.sync(tt.spawn(h)...)
			uid := ref.UID
			if tt.uid != "" {
				uid = "other"
			}
			result := h.sup.Stop(uid, StopResourceDeleted)
			blocking, polling := result.Names, result.Polling
			if diff := cmp.Diff(tt.wantBlocking, blocking); diff != "" {
				t.Errorf("blocking (-want +got):\n%s", diff)
			}
			if polling != tt.wantPolling {
				t.Errorf("polling = %s, want %s", polling, tt.wantPolling)
			}
		})
	}
}

// TestFiltersMismatch checks that a daemon that stops matching is stopped,
// counts as running while it stops, and is spawned afresh once it has
// exited and matches again.
func TestFiltersMismatch(t *testing.T) {
	h := newHarness(t, Settings{})
	x := h.daemon("x", Spec{})
	h.sync(x)
	first := h.next()
	gate := make(chan struct{})
	first.do(func(ctx context.Context, _ *DaemonCause) (any, error) {
		<-ctx.Done()
		<-gate
		return nil, ctx.Err()
	})
	h.sync() // x no longer matches
	if diff := cmp.Diff("FILTERS_MISMATCH|DAEMON_CANCELLED", stopCause(first.ctx).String()); diff != "" {
		t.Errorf("cause (-want +got):\n%s", diff)
	}
	h.sync(x) // it matches again, but still stops
	if r := h.runner(ref.UID, "x"); r == nil || r.Stopped() != first.d.Stopped() {
		t.Errorf("a stopping daemon was replaced by Sync")
	}
	h.clock.Step(time.Second)
	close(gate)
	h.exited(ref.UID)
	h.enqueued(1)
	h.sync(x)
	second := h.next()
	if second.Retry != 0 || !second.Started.Equal(t0.Add(time.Second)) {
		t.Errorf("respawned daemon: Retry %d, Started +%s; want 0, +1s", second.Retry, h.since(second.Started))
	}
	second.do(untilCancelled)
	if h.sup.ForeverStopped(ref.UID, "x") {
		t.Errorf("a mismatched daemon is forever stopped")
	}
}

// TestStopWhileSleeping checks that a stop interrupts the initial delay
// and the delay before a retry: the runner exits at once, on request.
func TestStopWhileSleeping(t *testing.T) {
	minute := func(causes.Object) time.Duration { return time.Minute }
	retrying := func(h *harness) {
		h.next().ret(nil, execution.NewTemporaryError("later", time.Minute))
	}
	tests := []struct {
		name  string
		kind  Kind
		spec  Spec
		setup func(h *harness)
	}{
		{name: "daemon in its initial delay", kind: KindDaemon, spec: Spec{InitialDelay: minute}},
		{name: "timer in its initial delay", kind: KindTimer, spec: Spec{InitialDelay: minute, Interval: time.Hour}},
		{name: "daemon before a retry", kind: KindDaemon, setup: retrying},
		{name: "timer before a retry", kind: KindTimer, spec: Spec{Interval: time.Hour}, setup: retrying},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, Settings{})
			x := h.daemon("x", tt.spec)
			x.Kind = tt.kind
			h.sync(x)
			if tt.setup != nil {
				tt.setup(h)
			}
			h.waiters(1)
			h.sup.Stop(ref.UID, StopResourceDeleted)
			h.exited(ref.UID)
			h.noCall()
			if h.sup.ForeverStopped(ref.UID, "x") {
				t.Errorf("a runner stopped in its sleep is forever stopped")
			}
			if len(h.logs.Find("has exited on request")) != 1 {
				t.Errorf("no exit on request logged: %+v", h.logs.All())
			}
		})
	}
}

// TestLingering: a daemon is "still exiting" only once it was asked to stop
// in an earlier call and no backoff or timeout of its stop is running any
// more; until then the engine has nothing to report about it.
func TestLingering(t *testing.T) {
	tests := []struct {
		name          string
		spec          Spec
		step          time.Duration
		wantLingering []string
	}{
		{"cancelled at once, no timeout", Spec{}, 0, []string{"Daemon 'x'"}},
		{"in its backoff", Spec{CancellationBackoff: time.Minute}, 0, nil},
		{"after its backoff, no timeout", Spec{CancellationBackoff: time.Minute}, time.Minute, []string{"Daemon 'x'"}},
		{"in its timeout", Spec{CancellationTimeout: time.Minute}, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, Settings{})
			h.sync(h.daemon("x", tt.spec))
			c := h.next()
			c.do(h.stubborn)
			if first := h.sup.Stop(ref.UID, StopResourceDeleted); first.Lingering != nil {
				t.Errorf("the first Stop reports %v as lingering; it has only just been asked", first.Lingering)
			}
			if tt.step > 0 {
				h.waiters(1)
				h.clock.Step(tt.step)
				h.eventually("the cancellation", func() bool { return c.ctx.Err() != nil })
			}
			if diff := cmp.Diff(tt.wantLingering, h.sup.Stop(ref.UID, StopResourceDeleted).Lingering); diff != "" {
				t.Errorf("Lingering -want +got:\n%s", diff)
			}
			h.release()
		})
	}
}

// TestInitialDelayWaitsForTheObject: an object that cannot be read for the
// initial delay is read again after the default backoff; the daemon does
// not end for it.
func TestInitialDelayWaitsForTheObject(t *testing.T) {
	h := newHarness(t, Settings{DefaultBackoff: 10 * time.Second})
	h.host.setFetchErr(errors.New("not yet"))
	h.sync(h.daemon("x", Spec{InitialDelay: func(causes.Object) time.Duration { return time.Second }}))
	h.waiters(1)
	h.host.setFetchErr(nil)
	h.clock.Step(10 * time.Second)
	h.waiters(1)
	h.clock.Step(time.Second)
	c := h.next()
	c.ret(nil, nil)
	h.exited(ref.UID)
	if !h.sup.ForeverStopped(ref.UID, "x") {
		t.Error("the daemon did not run to its end after the object became readable")
	}
}
