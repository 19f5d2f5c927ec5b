package cycle

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kopf-go/kopf/internal/jitter"
	"github.com/kopf-go/kopf/internal/memory"
)

// Kopf's delays after unexpected errors in a row, each with its jitter
// drawn from the source; the last delay repeats; a success ends the
// throttling and keeps the cycle's own requeue. The log says the delay
// that is waited, jitter included.
func TestThrottlerJitter(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	draws := []float64{0, 0.5, 0.2, 0.999, 0.1}
	next := 0
	th := throttler{delays: []time.Duration{time.Second, 2 * time.Second, 4 * time.Second},
		jitter: jitter.Jitter{Fraction: 0.5, Rand: func() float64 { v := draws[next]; next++; return v }}}
	var lines []string
	c := Object{Mem: &memory.Object{}, Local: funcr.New(func(_, args string) { lines = append(lines, args) }, funcr.Options{})}
	failure := errors.New("the API server is down")

	type step struct {
		err         error
		result      reconcile.Result
		wantAfter   time.Duration
		wantWaiting time.Duration // how long the object is held back afterwards
	}
	steps := []step{
		{err: failure, wantAfter: time.Second, wantWaiting: time.Second},
		{err: failure, wantAfter: 2500 * time.Millisecond, wantWaiting: 2500 * time.Millisecond},
		{err: failure, wantAfter: 4400 * time.Millisecond, wantWaiting: 4400 * time.Millisecond},
		{err: failure, wantAfter: 5998 * time.Millisecond, wantWaiting: 5998 * time.Millisecond},
		{err: failure, wantAfter: 4200 * time.Millisecond, wantWaiting: 4200 * time.Millisecond},
		{result: reconcile.Result{RequeueAfter: time.Minute}, wantAfter: time.Minute},
	}
	var got, want []string
	now := t0
	for i, s := range steps {
		result, err := th.after(c, now, s.result, s.err)
		if err != nil {
			t.Fatalf("step %d: the error went to controller-runtime: %v", i, err)
		}
		got = append(got, fmt.Sprintf("requeue after %s, held back for %s", result.RequeueAfter, max(c.Mem.ThrottledUntil.Sub(now), 0)))
		want = append(want, fmt.Sprintf("requeue after %s, held back for %s", s.wantAfter, s.wantWaiting))
		now = now.Add(result.RequeueAfter)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("throttling -want +got:\n%s", diff)
	}
	wantLines := []string{
		`"msg"="Throttling for 1 seconds due to an unexpected error: the API server is down" "error"="the API server is down"`,
		`"msg"="Throttling for 2.5 seconds due to an unexpected error: the API server is down" "error"="the API server is down"`,
		`"msg"="Throttling for 4.4 seconds due to an unexpected error: the API server is down" "error"="the API server is down"`,
		`"msg"="Throttling for 5.998 seconds due to an unexpected error: the API server is down" "error"="the API server is down"`,
		`"msg"="Throttling for 4.2 seconds due to an unexpected error: the API server is down" "error"="the API server is down"`,
		`"level"=0 "msg"="Throttling is over. Switching back to normal operations."`,
	}
	if diff := cmp.Diff(wantLines, lines); diff != "" {
		t.Errorf("log lines -want +got:\n%s", diff)
	}
}

// Without delays, throttling is off: the error goes to controller-runtime,
// whose rate limiter (with its jitter) decides the retry.
func TestThrottlerOff(t *testing.T) {
	th := throttler{jitter: jitter.Default()}
	c := Object{Mem: &memory.Object{}, Local: logr.Discard()}
	failure := errors.New("the API server is down")
	if _, err := th.after(c, time.Now(), reconcile.Result{}, failure); !errors.Is(err, failure) {
		t.Errorf("after() = %v, want the error itself", err)
	}
}
