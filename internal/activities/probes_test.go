package activities

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kopf-go/kopf/internal/causes"
	"github.com/kopf-go/kopf/internal/execution"
	"github.com/kopf-go/kopf/internal/registry"
	"github.com/kopf-go/kopf/pkg/indexing"
	"github.com/kopf-go/kopf/pkg/memo"
)

// gatedProbe is a probe handler that counts its calls, says when one has
// begun, and answers "ok" once released (or fails once its context ends).
type gatedProbe struct {
	calls   atomic.Int32
	begun   chan struct{}
	release chan struct{}
}

func newGatedProbe() *gatedProbe {
	return &gatedProbe{begun: make(chan struct{}, 100), release: make(chan struct{})}
}

func (g *gatedProbe) fn(ctx context.Context, _ *causes.Activity) (any, error) {
	g.calls.Add(1)
	g.begun <- struct{}{}
	select {
	case <-g.release:
		return "ok", nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// newTestProber is a prober of the one probe "p", on a fake clock, stopped
// (its round cancelled and waited for) when the test ends; goleak then
// finds nothing of it left.
func newTestProber(t *testing.T, fn registry.ActivityFunc) (*Prober, *clocktesting.FakeClock) {
	t.Helper()
	ignore := goleak.IgnoreCurrent()
	fc := clocktesting.NewFakeClock(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	reg := &registry.Registry{}
	reg.AddActivity(&registry.ActivityHandler{Handler: execution.Handler{ID: "p", Title: "Activity"}, Kind: registry.ActivityProbe, Fn: fn})
	p := NewProber(reg, Settings{Clock: fc, Memo: &memo.Memo{}, Indices: &indexing.Indices{}, Defaults: execution.Defaults{Errors: execution.ErrorsTemporary, Backoff: time.Minute}}, logr.Discard())
	t.Cleanup(func() {
		p.stop()
		goleak.VerifyNone(t, ignore)
	})
	return p, fc
}

// answer is what one caller of Results got.
type answer struct {
	results map[string]any
	err     error
}

// call runs Results in a goroutine of the test's; the channel gives its
// answer.
func call(ctx context.Context, p *Prober) <-chan answer {
	out := make(chan answer, 1)
	go func() {
		results, err := p.Results(ctx)
		out <- answer{results, err}
	}()
	return out
}

func waitFor[T any](t *testing.T, what string, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(30 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// A caller that hangs up in the middle of a round (the kubelet after its
// timeout) gets its own context's error at once, and the round goes on:
// the next caller gets its good result, cached, without a round of its
// own.
func TestProberCallerHangsUp(t *testing.T) {
	g := newGatedProbe()
	p, _ := newTestProber(t, g.fn)

	impatient, hangUp := context.WithCancel(context.Background())
	first := call(impatient, p)
	waitFor(t, "the round to begin", g.begun)
	hangUp()
	if got := waitFor(t, "the impatient caller", first); !errors.Is(got.err, context.Canceled) {
		t.Fatalf("the caller that hung up got %v, %v; want its own context's error", got.results, got.err)
	}

	close(g.release)
	got := waitFor(t, "the next caller", call(context.Background(), p))
	if diff := cmp.Diff(answer{results: map[string]any{"p": "ok"}}, got, cmp.Comparer(sameError), cmp.AllowUnexported(answer{})); diff != "" {
		t.Errorf("the next caller's answer -want +got:\n%s", diff)
	}
	got = waitFor(t, "a caller after the round", call(context.Background(), p))
	if diff := cmp.Diff(answer{results: map[string]any{"p": "ok"}}, got, cmp.Comparer(sameError), cmp.AllowUnexported(answer{})); diff != "" {
		t.Errorf("a caller after the round -want +got:\n%s", diff)
	}
	if n := g.calls.Load(); n != 1 {
		t.Errorf("the probe ran %d times, want once: the round of the caller that hung up serves the others", n)
	}
}

// Callers that come while a round runs wait for it: one round for all.
// Its results are reused for ten seconds on the engine's clock; then a
// caller starts a new round.
func TestProberOneRoundForAll(t *testing.T) {
	g := newGatedProbe()
	p, fc := newTestProber(t, g.fn)
	var answers []<-chan answer
	answers = append(answers, call(context.Background(), p))
	waitFor(t, "the round to begin", g.begun)
	for range 4 {
		answers = append(answers, call(context.Background(), p))
	}
	// The later callers are waiting for the round under way (none can
	// have started another: the probe has been called once and blocks).
	close(g.release)
	for i, ch := range answers {
		if got := waitFor(t, "a caller", ch); got.err != nil || got.results["p"] != "ok" {
			t.Errorf("caller %d got %v, %v; want the round's result", i, got.results, got.err)
		}
	}
	if n := g.calls.Load(); n != 1 {
		t.Errorf("five callers during one round: the probe ran %d times, want once", n)
	}

	fc.Step(probeCacheTTL - time.Second)
	waitFor(t, "a caller within the ten seconds", call(context.Background(), p))
	if n := g.calls.Load(); n != 1 {
		t.Errorf("within ten seconds of the round: the probe ran %d times, want the cached result", n)
	}
	fc.Step(time.Second)
	if got := waitFor(t, "a caller after ten seconds", call(context.Background(), p)); got.err != nil {
		t.Errorf("a caller after ten seconds: %v", got.err)
	}
	if n := g.calls.Load(); n != 2 {
		t.Errorf("ten seconds after the round: the probe ran %d times, want a new round", n)
	}
}

// A round that hangs is cut at the probe timeout on the engine's clock,
// whatever its callers would wait: the probe fails, saying so, and the
// callers get that failure.
func TestProberTimeout(t *testing.T) {
	g := newGatedProbe() // never released
	p, fc := newTestProber(t, g.fn)
	patient := call(context.Background(), p)
	waitFor(t, "the round to begin", g.begun)
	// The round's timer is set before the probe runs.
	fc.Step(probeTimeout)
	got := waitFor(t, "the caller", patient)
	if got.err == nil || !strings.Contains(got.err.Error(), "probe 'p' failed") || !errors.Is(got.err, errProbeTimeout) {
		t.Errorf("a hanging probe gave %v, want it failed by the timeout", got.err)
	}
}

// Once the prober has stopped (the manager stops), no round starts, and
// the last results stand, so that liveness does not fail while the
// operator stops gracefully.
func TestProberStopped(t *testing.T) {
	g := newGatedProbe()
	close(g.release)
	p, fc := newTestProber(t, g.fn)
	waitFor(t, "a round", call(context.Background(), p))
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = p.Start(ctx) })
	cancel()
	wg.Wait()
	fc.Step(probeCacheTTL)
	got := waitFor(t, "a caller after the stop", call(context.Background(), p))
	if got.err != nil || got.results["p"] != "ok" || g.calls.Load() != 1 {
		t.Errorf("after the stop: %v, %v, %d calls; want the last results and no new round", got.results, got.err, g.calls.Load())
	}
}

func sameError(a, b error) bool {
	return a == nil && b == nil || a != nil && b != nil && a.Error() == b.Error()
}
