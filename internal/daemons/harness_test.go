package daemons

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"go.uber.org/goleak"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kopf-go/kopf/internal/await"
	"github.com/kopf-go/kopf/internal/causes"
	"github.com/kopf-go/kopf/internal/execution"
	"github.com/kopf-go/kopf/pkg/patch"
)

// t0 is the fake clock's time when each test begins.
var t0 = time.Date(2100, 1, 2, 3, 4, 5, 0, time.UTC)

// patience bounds, in real time, every wait for a goroutine to reach a
// state; fake time never passes by itself.
const patience = 10 * time.Second

// ref is the object that most tests run daemons and timers for.
var ref = Ref{UID: "uid-1", Namespace: "ns", Name: "name"}

// fakeHost is the engine's side of the supervisor: it returns a fixed
// object, and records the patches written and the reconciles requested.
type fakeHost struct {
	mu       sync.Mutex
	obj      *unstructured.Unstructured
	fetchErr error
	fetches  int
	applied  []map[string]any
	enqueued []Ref
	// onEnqueue, when set, is called before a reconcile request is noted.
	onEnqueue func(Ref)
}

func newHost() *fakeHost {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kopf.dev/v1",
		"kind":       "KopfExample",
		"spec":       map[string]any{"field": "value"},
	}}
	return &fakeHost{obj: obj}
}

// Fetch returns a copy of the fixed object under the ref's name.
func (f *fakeHost) Fetch(_ context.Context, r Ref) (causes.Object, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fetches++
	if f.fetchErr != nil {
		return nil, f.fetchErr
	}
	obj := f.obj.DeepCopy()
	obj.SetNamespace(r.Namespace)
	obj.SetName(r.Name)
	obj.SetUID(r.UID)
	return obj, nil
}

// Body is the unstructured object's own map.
func (f *fakeHost) Body(obj causes.Object) (map[string]any, error) {
	return obj.(*unstructured.Unstructured).Object, nil
}

// Apply records the patch as the JSON merge patch that would be sent.
func (f *fakeHost) Apply(_ context.Context, _ Ref, p *patch.Patch) error {
	data, err := json.Marshal(p)
	if err != nil {
		return err
	}
	var body map[string]any
	if err := json.Unmarshal(data, &body); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.applied = append(f.applied, body)
	return nil
}

func (f *fakeHost) Label() string { return "fake" }

func (f *fakeHost) Enqueue(r Ref) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.onEnqueue != nil {
		f.onEnqueue(r)
	}
	f.enqueued = append(f.enqueued, r)
}

func (f *fakeHost) setFetchErr(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fetchErr = err
}

func (f *fakeHost) setLabel(key, value string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	labels := f.obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[key] = value
	f.obj.SetLabels(labels)
}

func (f *fakeHost) Applied() []map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]map[string]any(nil), f.applied...)
}

func (f *fakeHost) Enqueued() []Ref {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Ref(nil), f.enqueued...)
}

// behaviour is what a scripted function does once the test lets it go on.
type behaviour func(ctx context.Context, d *DaemonCause) (any, error)

// returns is a behaviour that returns at once.
func returns(result any, err error) behaviour {
	return func(context.Context, *DaemonCause) (any, error) { return result, err }
}

// untilCancelled is a behaviour that returns the context's error once the
// context is cancelled, as a well-behaved daemon does.
func untilCancelled(ctx context.Context, _ *DaemonCause) (any, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// call is one invocation of a scripted daemon or timer function, blocked
// until the test sends a behaviour.
type call struct {
	ID      string
	At      time.Time
	Obj     causes.Object
	Retry   int
	Started time.Time
	ctx     context.Context
	d       *DaemonCause
	reply   chan behaviour
}

func (c *call) do(b behaviour)            { c.reply <- b }
func (c *call) ret(result any, err error) { c.reply <- returns(result, err) }

// harness runs a supervisor on a fake clock, with its Start already
// waiting for the operator's stop, and checks at the end of the test that
// no goroutine is left behind.
type harness struct {
	t       *testing.T
	clock   *clocktesting.FakeClock
	sup     *Supervisor
	host    *fakeHost
	logs    *captureSink
	log     logr.Logger
	essence uint64
	calls   chan *call
	// quit, once closed, makes blocked calls and stubborn behaviours return.
	quit     chan struct{}
	quitOnce sync.Once
	stopOnce sync.Once
	cancel   context.CancelFunc
	// startDone is closed when Start has returned.
	startDone chan struct{}
}

// logFor is the objects' logger, as Sync asks for it.
func (h *harness) logFor() logr.Logger { return h.log }

func newHarness(t *testing.T, s Settings) *harness {
	t.Cleanup(func() { goleak.VerifyNone(t) }) // registered first, so it runs last
	clk := clocktesting.NewFakeClock(t0)
	logs := newCapture()
	s.Clock = clk
	s.Logger = logr.New(logs)
	h := &harness{
		t: t, clock: clk, sup: New(s), host: newHost(), logs: logs, log: logr.New(logs),
		essence: 1, calls: make(chan *call, 100), quit: make(chan struct{}),
		startDone: make(chan struct{}),
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	go func() {
		defer close(h.startDone)
		if err := h.sup.Start(ctx); err != nil {
			t.Errorf("Start: %v", err)
		}
	}()
	t.Cleanup(h.stop)
	return h
}

// stop lets every blocked function return and stops the supervisor as
// the operator's stop does, waiting for its Start to return. It is called
// at the end of every test, and may be called earlier.
func (h *harness) stop() {
	h.stopOnce.Do(func() {
		h.release()
		h.cancel()
		select {
		case <-h.startDone:
		case <-time.After(patience):
			h.t.Errorf("the supervisor did not stop; stepping over its grace")
			h.clock.Step(time.Hour)
			<-h.startDone
		}
	})
}

// release lets blocked calls and stubborn behaviours return. They return
// context.Canceled: an exit on request if the daemon is being stopped, an
// arbitrary error (retried after a backoff) if not, but never an exit on
// their own, which would be noted and reconciled.
func (h *harness) release() { h.quitOnce.Do(func() { close(h.quit) }) }

// stubborn is a behaviour that ignores its context and the stop, and
// returns only when the test releases it.
func (h *harness) stubborn(context.Context, *DaemonCause) (any, error) {
	<-h.quit
	return nil, context.Canceled
}

// fn returns a scripted function: each call is sent to the test, which
// then tells it what to do.
func (h *harness) fn(id string) Func {
	return func(ctx context.Context, obj causes.Object, d *DaemonCause) (any, error) {
		c := &call{ID: id, At: h.clock.Now(), Obj: obj, Retry: d.Retry, Started: d.Started,
			ctx: ctx, d: d, reply: make(chan behaviour, 1)}
		h.calls <- c
		select {
		case b := <-c.reply:
			return b(ctx, d)
		case <-h.quit:
			return nil, context.Canceled
		}
	}
}

// daemon and timer return handlers with scripted functions; the spec's
// Kind and Fn are filled in.
func (h *harness) daemon(id string, spec Spec) Handler {
	spec.Kind, spec.Fn = KindDaemon, h.fn(id)
	return Handler{Handler: execution.Handler{ID: id, Title: "Daemon"}, Spec: spec}
}

func (h *harness) timer(id string, spec Spec) Handler {
	spec.Kind, spec.Fn = KindTimer, h.fn(id)
	return Handler{Handler: execution.Handler{ID: id, Title: "Timer"}, Spec: spec}
}

// sync tells the supervisor which handlers match the object now, with the
// harness's current essence fingerprint.
func (h *harness) sync(hs ...Handler) {
	h.sup.Sync(ref, h.host, h.logFor, hs, h.essence, nil, nil)
}

// next waits for the next call of any scripted function.
func (h *harness) next() *call {
	h.t.Helper()
	select {
	case c := <-h.calls:
		return c
	case <-time.After(patience):
		h.t.Fatalf("no call within %s (fake time %s)", patience, h.clock.Now().Sub(t0))
		return nil
	}
}

// noCall fails if a scripted function has been called and not yet taken.
func (h *harness) noCall() {
	h.t.Helper()
	select {
	case c := <-h.calls:
		h.t.Fatalf("unexpected call of %s at +%s (retry %d)", c.ID, c.At.Sub(t0), c.Retry)
	default:
	}
}

// eventually polls the condition until it holds.
func (h *harness) eventually(what string, cond func() bool) {
	h.t.Helper()
	await.True(h.t, what, patience, cond)
}

// waiters waits until exactly n timers wait on the fake clock, so that a
// following Step reaches every goroutine that is meant to sleep.
func (h *harness) waiters(n int) {
	h.t.Helper()
	h.eventually(fmt.Sprintf("%d waiters on the clock", n), func() bool { return h.clock.Waiters() == n })
}

// settle waits until n timers wait on the clock, and fails if a function
// is called instead: it proves that a step woke nothing up for a call.
func (h *harness) settle(n int) {
	h.t.Helper()
	h.eventually(fmt.Sprintf("%d waiters on the clock or a call", n), func() bool {
		return h.clock.Waiters() == n || len(h.calls) > 0
	})
	h.noCall()
}

// since is the fake time passed since the test began.
func (h *harness) since(t time.Time) time.Duration { return t.Sub(t0) }

// running lists the ids of the object's runners, including stopping ones.
func (h *harness) running(uid types.UID) []string {
	h.sup.mu.Lock()
	defer h.sup.mu.Unlock()
	var ids []string
	if o, ok := h.sup.objects[uid]; ok {
		for id := range o.runners {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

// exited waits until the object has no runners left.
func (h *harness) exited(uid types.UID) {
	h.t.Helper()
	h.eventually("the runners to exit", func() bool { return len(h.running(uid)) == 0 })
}

// runner returns the object's runner of the handler, nil if none.
func (h *harness) runner(uid types.UID, id string) *runner {
	h.sup.mu.Lock()
	defer h.sup.mu.Unlock()
	if o, ok := h.sup.objects[uid]; ok {
		return o.runners[id]
	}
	return nil
}

// known reports whether the supervisor still remembers the object.
func (h *harness) known(uid types.UID) bool {
	h.sup.mu.Lock()
	defer h.sup.mu.Unlock()
	_, ok := h.sup.objects[uid]
	return ok
}

// enqueued waits until the object has been enqueued n times in total.
func (h *harness) enqueued(n int) {
	h.t.Helper()
	h.eventually(fmt.Sprintf("%d reconcile requests", n), func() bool { return len(h.host.Enqueued()) >= n })
	if got := len(h.host.Enqueued()); got != n {
		h.t.Fatalf("%d reconcile requests, want %d", got, n)
	}
}

// stopCause returns the context's cause as a stop reason, zero if it is not
// cancelled or by something else.
func stopCause(ctx context.Context) StopReason {
	var r StopReason
	if !errors.As(context.Cause(ctx), &r) {
		return 0
	}
	return r
}

// callAt steps the fake clock to the time since the test began, in two
// steps, checking that nothing is called a millisecond early, and returns
// the call that comes then. Exactly one goroutine must sleep on the clock.
func (h *harness) callAt(at time.Duration) *call {
	h.t.Helper()
	if gap := t0.Add(at).Sub(h.clock.Now()); gap > 0 {
		h.waiters(1)
		h.clock.Step(gap - time.Millisecond)
		h.settle(1)
		h.clock.Step(time.Millisecond)
	}
	c := h.next()
	if got := h.since(c.At); got != at {
		h.t.Fatalf("%s called at +%s, want +%s", c.ID, got, at)
	}
	return c
}
