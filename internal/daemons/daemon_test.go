package daemons

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kopf-go/kopf/internal/causes"
	"github.com/kopf-go/kopf/internal/execution"
)

func TestDaemonIsSpawnedOncePerObjectAndID(t *testing.T) {
	h := newHarness(t, Settings{})
	x, y := h.daemon("x", Spec{}), h.daemon("y", Spec{})
	for range 5 {
		h.sync(x, y)
	}
	got := map[string]*call{}
	for range 2 {
		c := h.next()
		got[c.ID] = c
	}
	h.sync(x, y)
	if diff := cmp.Diff([]string{"x", "y"}, h.running(ref.UID)); diff != "" {
		t.Errorf("runners (-want +got):\n%s", diff)
	}
	type seen struct {
		Namespace, Name, UID string
		Spec                 any // from the body
		ID                   string
		Retry                int
		Started              time.Time
	}
	for _, id := range []string{"x", "y"} {
		c := got[id]
		if c == nil {
			t.Fatalf("daemon %s was not called", id)
		}
		want := seen{Namespace: "ns", Name: "name", UID: "uid-1", Spec: map[string]any{"field": "value"}, ID: id, Started: t0}
		have := seen{Namespace: c.Obj.GetNamespace(), Name: c.Obj.GetName(), UID: string(c.Obj.GetUID()),
			Spec: c.d.Body()["spec"], ID: c.d.HandlerID, Retry: c.Retry, Started: c.Started}
		if diff := cmp.Diff(want, have); diff != "" {
			t.Errorf("daemon %s's call (-want +got):\n%s", id, diff)
		}
		if r := c.d.StopReason(); r != 0 {
			t.Errorf("daemon %s's StopReason() = %s while it runs", id, r)
		}
		c.do(untilCancelled)
	}
	h.noCall()
}

func TestDaemonResultsAndPatches(t *testing.T) {
	tests := []struct {
		name string
		b    behaviour
		want []map[string]any
	}{
		{name: "a map result merged with the function's own status and changes",
			b: func(_ context.Context, d *DaemonCause) (any, error) {
				d.Patch.MergeStatus("x", map[string]any{"note": "own"})
				d.Patch.SetLabel("seen", "yes")
				return map[string]any{"done": true}, nil
			},
			want: []map[string]any{{
				"metadata": map[string]any{"labels": map[string]any{"seen": "yes"}},
				"status":   map[string]any{"x": map[string]any{"note": "own", "done": true}},
			}}},
		{name: "a scalar result",
			b:    returns("finished", nil),
			want: []map[string]any{{"status": map[string]any{"x": "finished"}}}},
		{name: "no result but changes",
			b: func(_ context.Context, d *DaemonCause) (any, error) {
				d.Patch.SetAnnotation("a", "b")
				return nil, nil
			},
			want: []map[string]any{{"metadata": map[string]any{"annotations": map[string]any{"a": "b"}}}}},
		{name: "no result and no changes: nothing is written",
			b: returns(nil, nil)},
		{name: "a result that cannot be stored: only the changes are written",
			b: func(_ context.Context, d *DaemonCause) (any, error) {
				d.Patch.SetAnnotation("a", "b")
				return func() {}, nil
			},
			want: []map[string]any{{"metadata": map[string]any{"annotations": map[string]any{"a": "b"}}}}},
		{name: "a permanent failure still writes the function's changes",
			b: func(_ context.Context, d *DaemonCause) (any, error) {
				d.Patch.SetStatus("progress", 50)
				return map[string]any{"ignored": true}, execution.NewPermanentError("no")
			},
			want: []map[string]any{{"status": map[string]any{"progress": float64(50)}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, Settings{})
			h.sync(h.daemon("x", Spec{}))
			h.next().do(tt.b)
			h.exited(ref.UID)
			if diff := cmp.Diff(tt.want, h.host.Applied()); diff != "" {
				t.Errorf("applied patches (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDaemonEndsForGood covers the ways a daemon ends on its own: it is
// not restarted, it is forever stopped, and its object is reconciled
// again (after it is gone, so that the finalizer can be dropped).
func TestDaemonEndsForGood(t *testing.T) {
	tests := []struct {
		name    string
		retries int
		b       []behaviour // one per call, in order
		wantLog logLine
	}{
		{name: "success without a result", b: []behaviour{returns(nil, nil)},
			wantLog: logLine{Level: "info", Msg: "Daemon 'x' succeeded."}},
		{name: "success with a result", b: []behaviour{returns(map[string]any{"done": true}, nil)},
			wantLog: logLine{Level: "info", Msg: "Daemon 'x' succeeded."}},
		{name: "a permanent error", b: []behaviour{returns(nil, execution.NewPermanentError("nope"))},
			wantLog: logLine{Level: "error", Msg: "Daemon 'x' failed permanently: nope"}},
		{name: "retries used up", retries: 3, b: []behaviour{
			returns(nil, execution.NewTemporaryError("again", 0)),
			returns(nil, execution.NewTemporaryError("again", 0)),
			returns(nil, execution.NewTemporaryError("again", 0)),
		}, wantLog: logLine{Level: "error", Msg: "Daemon 'x' failed temporarily but will exceed 3 retries: again"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, Settings{})
			type atEnqueue struct {
				Running        []string
				ForeverStopped bool
			}
			var seen []atEnqueue
			h.host.onEnqueue = func(Ref) {
				seen = append(seen, atEnqueue{h.running(ref.UID), h.sup.ForeverStopped(ref.UID, "x")})
			}
			x := h.daemon("x", Spec{})
			x.Retries = tt.retries
			h.sync(x)
			for i, b := range tt.b {
				c := h.next()
				if c.Retry != i {
					t.Errorf("call %d: Retry = %d, want %d", i, c.Retry, i)
				}
				c.do(b)
			}
			h.eventually("the reconcile request", func() bool { return len(h.host.Enqueued()) > 0 })
			h.sync(x)
			if got := h.running(ref.UID); len(got) != 0 {
				t.Errorf("Sync spawned %v again", got)
			}
			if !h.sup.ForeverStopped(ref.UID, "x") {
				t.Errorf("ForeverStopped is false")
			}
			if diff := cmp.Diff([]atEnqueue{{ForeverStopped: true}}, seen); diff != "" {
				t.Errorf("state when enqueued (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]Ref{ref}, h.host.Enqueued()); diff != "" {
				t.Errorf("enqueued (-want +got):\n%s", diff)
			}
			if len(h.logs.Find(tt.wantLog.Msg)) == 0 {
				t.Errorf("no log line %+v in %+v", tt.wantLog, h.logs.All())
			}
			want := []logLine{{Level: "debug", Msg: "Daemon 'x' has exited on its own and will not be retried or restarted."}}
			if diff := cmp.Diff(want, h.logs.Find("has exited")); diff != "" {
				t.Errorf("exit log (-want +got):\n%s", diff)
			}
			h.noCall()
		})
	}
}

// TestDaemonRetriesAfterDelay checks that a failed attempt is repeated
// after the error's delay, or the backoff, with Retry+1.
func TestDaemonRetriesAfterDelay(t *testing.T) {
	threeSeconds := 3 * time.Second
	tests := []struct {
		name      string
		backoff   *time.Duration // the handler's own backoff
		err       error
		panics    bool
		wantDelay time.Duration
	}{
		{name: "temporary error", err: execution.NewTemporaryError("later", 5*time.Second), wantDelay: 5 * time.Second},
		{name: "temporary error, no delay", err: execution.NewTemporaryError("now", 0), wantDelay: 0},
		{name: "arbitrary error: the settings' backoff", err: errors.New("boom"), wantDelay: 7 * time.Second},
		{name: "arbitrary error: the handler's backoff", backoff: &threeSeconds, err: errors.New("boom"), wantDelay: 3 * time.Second},
		{name: "panic: the settings' backoff", panics: true, wantDelay: 7 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, Settings{DefaultBackoff: 7 * time.Second})
			x := h.daemon("x", Spec{})
			x.Backoff = tt.backoff
			h.sync(x)
			h.next().do(func(context.Context, *DaemonCause) (any, error) {
				if tt.panics {
					panic("oops")
				}
				return nil, tt.err
			})
			if tt.wantDelay > 0 {
				h.waiters(1)
				h.clock.Step(tt.wantDelay - time.Millisecond)
				h.settle(1)
				h.clock.Step(time.Millisecond)
			}
			c := h.next()
			type attempt struct {
				Retry   int
				Started time.Time
				Runtime time.Duration
				At      time.Duration
			}
			want := attempt{Retry: 1, Started: t0, Runtime: tt.wantDelay, At: tt.wantDelay}
			if diff := cmp.Diff(want, attempt{c.Retry, c.Started, c.d.Runtime, h.since(c.At)}); diff != "" {
				t.Errorf("second attempt (-want +got):\n%s", diff)
			}
			c.ret(map[string]any{"ok": true}, nil)
			h.exited(ref.UID)
			if diff := cmp.Diff([]map[string]any{{"status": map[string]any{"x": map[string]any{"ok": true}}}}, h.host.Applied()); diff != "" {
				t.Errorf("applied patches (-want +got):\n%s", diff)
			}
			if !h.sup.ForeverStopped(ref.UID, "x") {
				t.Errorf("ForeverStopped is false after the success")
			}
		})
	}
}

// TestDaemonRetriesWhenItsObjectCannotBeRead checks that a failed read of
// the object counts as a failed attempt, retried after the backoff.
func TestDaemonRetriesWhenItsObjectCannotBeRead(t *testing.T) {
	h := newHarness(t, Settings{DefaultBackoff: 7 * time.Second})
	h.host.setFetchErr(errors.New("cache is cold"))
	h.sync(h.daemon("x", Spec{}))
	h.waiters(1)
	h.host.setFetchErr(nil)
	h.clock.Step(7 * time.Second)
	c := h.next()
	if c.Retry != 1 || !c.At.Equal(t0.Add(7*time.Second)) {
		t.Errorf("attempt after the failed read: Retry %d at +%s, want 1 at +7s", c.Retry, h.since(c.At))
	}
	c.do(untilCancelled)
	want := []logLine{{Level: "error", Msg: "Daemon 'x' cannot read its object; trying again later."}}
	if diff := cmp.Diff(want, h.logs.Find("cannot read")); diff != "" {
		t.Errorf("log (-want +got):\n%s", diff)
	}
}

func TestDaemonCauseHelpers(t *testing.T) {
	h := newHarness(t, Settings{})
	h.sync(h.daemon("x", Spec{}))
	c := h.next()
	slept := make(chan bool)
	c.do(func(ctx context.Context, d *DaemonCause) (any, error) {
		slept <- d.Sleep(ctx, 10*time.Second)
		slept <- d.Sleep(ctx, 10*time.Second)
		slept <- d.Sleep(ctx, 10*time.Second) // after the stop: at once
		return nil, nil
	})
	h.waiters(1)
	h.clock.Step(10 * time.Second)
	if !<-slept {
		t.Errorf("Sleep over the full time reported false")
	}
	h.waiters(1)
	h.sup.Stop(ref.UID, StopResourceDeleted)
	if <-slept {
		t.Errorf("Sleep interrupted by the stop reported true")
	}
	if <-slept {
		t.Errorf("Sleep after the stop reported true")
	}

	// Latest reads the object afresh.
	h.host.setLabel("fresh", "yes")
	obj, err := c.d.Latest(context.Background())
	if err != nil || obj.GetLabels()["fresh"] != "yes" {
		t.Errorf("Latest() = %v, %v; want the object with the fresh label", obj, err)
	}
	h.host.setFetchErr(errors.New("boom"))
	if _, err := c.d.Latest(context.Background()); err == nil || err.Error() != "read the latest ns/name: boom" {
		t.Errorf("Latest() error = %v, want %q", err, "read the latest ns/name: boom")
	}
}

// TestDaemonInitialDelay checks that the initial delay is computed from
// the object, and that the daemon's first attempt starts after it.
func TestDaemonInitialDelay(t *testing.T) {
	h := newHarness(t, Settings{})
	h.host.obj.Object["spec"] = map[string]any{"delay": int64(7)}
	h.sync(h.daemon("x", Spec{InitialDelay: func(obj causes.Object) time.Duration {
		delay, _, _ := unstructured.NestedInt64(obj.(*unstructured.Unstructured).Object, "spec", "delay")
		return time.Duration(delay) * time.Second
	}}))
	c := h.callAt(7 * time.Second)
	if c.Retry != 0 || !c.Started.Equal(t0.Add(7*time.Second)) {
		t.Errorf("first attempt: Retry %d, Started +%s; want 0, +7s", c.Retry, h.since(c.Started))
	}
	c.do(untilCancelled)
}

// A runner starts with a copy of the object that the spawner read, and
// reads it itself only for later attempts.
func TestFirstAttemptUsesTheSyncedObject(t *testing.T) {
	h := newHarness(t, Settings{})
	seen := h.synced()
	h.sup.Sync(ref, h.host, h.logFor, []Handler{h.daemon("x", Spec{})}, h.essence, nil, seen)
	seen.Object["spec"] = map[string]any{"field": "changed by the spawner afterwards"}

	c := h.next()
	if got := c.d.Body()["spec"]; !cmp.Equal(got, map[string]any{"field": "as synced"}) {
		t.Errorf("the first attempt saw spec %v, want the synced object's own copy", got)
	}
	if fetches := h.fetches(); fetches != 0 {
		t.Errorf("the first attempt read the object %d times, want 0", fetches)
	}
	c.do(returns(nil, execution.NewTemporaryError("again", time.Second)))
	h.waiters(1)
	h.clock.Step(time.Second)
	c = h.next()
	if got := c.d.Body()["spec"]; !cmp.Equal(got, map[string]any{"field": "value"}) {
		t.Errorf("the retry saw spec %v, want the host's latest", got)
	}
	c.do(untilCancelled)
}

// Two runners spawned by one Sync each start with a copy of their own,
// made outside the supervisor's lock: one's change to its object is not
// the other's.
func TestRunnersSpawnedTogetherHaveCopiesOfTheirOwn(t *testing.T) {
	h := newHarness(t, Settings{})
	seen := h.synced()
	h.sup.Sync(ref, h.host, h.logFor, []Handler{h.daemon("x", Spec{}), h.daemon("y", Spec{})}, h.essence, nil, seen)

	first, second := h.next(), h.next()
	first.d.Body()["spec"] = map[string]any{"field": "changed by one runner"}
	if got := second.d.Body()["spec"]; !cmp.Equal(got, map[string]any{"field": "as synced"}) {
		t.Errorf("the other runner saw spec %v, want its own copy as synced", got)
	}
	if fetches := h.fetches(); fetches != 0 {
		t.Errorf("the first attempts read the object %d times, want 0", fetches)
	}
	first.do(untilCancelled)
	second.do(untilCancelled)
}

// synced is the host's object as a spawner read it, its spec marked.
func (h *harness) synced() *unstructured.Unstructured {
	seen := h.host.obj.DeepCopy()
	seen.SetNamespace(ref.Namespace)
	seen.SetName(ref.Name)
	seen.SetUID(ref.UID)
	seen.Object["spec"] = map[string]any{"field": "as synced"}
	return seen
}

// fetches is how many times the runners read the object from the host.
func (h *harness) fetches() int {
	h.host.mu.Lock()
	defer h.host.mu.Unlock()
	return h.host.fetches
}
