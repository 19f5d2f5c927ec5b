// Package bench measures kopf-go's costs. Benchmarks report figures and
// assert nothing about time; `make bench` runs them, docs/benchmarks.md
// records them.
package bench

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kopf-go/kopf/internal/causes"
	"github.com/kopf-go/kopf/internal/daemons"
	"github.com/kopf-go/kopf/internal/execution"
	"github.com/kopf-go/kopf/pkg/patch"
)

// host stands in for the API server: every Fetch returns a fresh copy of
// an example object, as the engine's cache does, so that what a daemon
// holds is counted.
type host struct{ proto *unstructured.Unstructured }

func (h *host) Fetch(context.Context, daemons.Ref) (causes.Object, error) {
	return h.proto.DeepCopy(), nil
}
func (h *host) Body(obj causes.Object) (map[string]any, error) {
	return obj.(*unstructured.Unstructured).Object, nil
}
func (h *host) Apply(context.Context, daemons.Ref, *patch.Patch) error { return nil }
func (h *host) Enqueue(daemons.Ref)                                    {}
func (h *host) Label() string                                          { return "bench" }

func exampleObject() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
		"metadata": map[string]any{"name": "kopf-example", "namespace": "default",
			"labels": map[string]any{"somelabel": "somevalue"}, "annotations": map[string]any{"someannotation": "somevalue"}},
		"spec": map[string]any{"duration": "1m", "field": "value", "items": []any{"item1", "item2"}},
	}}
}

// daemonFigures are what one run of the daemon workload measures.
type daemonFigures struct {
	bytesPerRunner float64
	goroutines     int
	stop           time.Duration
}

// blockingDaemon runs until its context is cancelled.
func blockingDaemon(started *atomic.Int64) daemons.Handler {
	return daemons.Handler{Handler: execution.Handler{ID: "daemon", Title: "Daemon"}, Spec: daemons.Spec{
		Kind: daemons.KindDaemon,
		Fn: func(ctx context.Context, obj causes.Object, d *daemons.DaemonCause) (any, error) {
			started.Add(1)
			<-ctx.Done()
			return nil, ctx.Err()
		},
	}}
}

// hourlyTimer ticks once at the start and then sleeps.
func hourlyTimer(started *atomic.Int64) daemons.Handler {
	return daemons.Handler{Handler: execution.Handler{ID: "timer", Title: "Timer"}, Spec: daemons.Spec{
		Kind:     daemons.KindTimer,
		Interval: time.Hour,
		Fn: func(ctx context.Context, obj causes.Object, d *daemons.DaemonCause) (any, error) {
			started.Add(1)
			return nil, nil
		},
	}}
}

// runDaemons spawns the handlers for each of n objects, measures the
// memory they hold once all have started, then stops the operator and
// measures how long the supervisor takes to stop them all.
func runDaemons(tb testing.TB, n int, kinds ...func(*atomic.Int64) daemons.Handler) daemonFigures {
	var started atomic.Int64
	handlers := make([]daemons.Handler, len(kinds))
	for i, kind := range kinds {
		handlers[i] = kind(&started)
	}
	sup := daemons.New(daemons.Settings{Logger: logr.Discard()})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = sup.Start(ctx)
	}()
	h := &host{proto: exampleObject()}

	before := heapAndStacks()
	goroutinesBefore := runtime.NumGoroutine()
	for i := range n {
		ref := daemons.Ref{UID: types.UID(fmt.Sprintf("uid-%d", i)), Namespace: "default", Name: fmt.Sprintf("kopf-example-%d", i)}
		sup.Sync(ref, h, logr.Discard, handlers, 0, nil, nil)
	}
	for started.Load() < int64(len(handlers)*n) {
		time.Sleep(10 * time.Millisecond)
	}
	after := heapAndStacks()
	runners := len(handlers) * n
	figures := daemonFigures{
		bytesPerRunner: float64(after-before) / float64(runners),
		goroutines:     runtime.NumGoroutine() - goroutinesBefore,
	}

	begin := time.Now()
	cancel()
	wg.Wait()
	figures.stop = time.Since(begin)
	return figures
}

// heapAndStacks is the memory in use by the heap and by goroutine stacks,
// after a collection.
func heapAndStacks() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse + m.StackInuse
}

// BenchmarkDaemons10k: 10,000 objects with a daemon each, with a timer
// each, and with both. bytes/runner is the memory one daemon or timer
// holds (its goroutine's stack, its state, the object copy a running daemon
// works on); stop-s is the time from the operator's stop until every one of
// them has exited.
func BenchmarkDaemons10k(b *testing.B) {
	for _, bm := range []struct {
		name  string
		kinds []func(*atomic.Int64) daemons.Handler
	}{
		{"daemon", []func(*atomic.Int64) daemons.Handler{blockingDaemon}},
		{"timer", []func(*atomic.Int64) daemons.Handler{hourlyTimer}},
		{"daemon+timer", []func(*atomic.Int64) daemons.Handler{blockingDaemon, hourlyTimer}},
	} {
		b.Run(bm.name, func(b *testing.B) {
			for b.Loop() {
				f := runDaemons(b, 10_000, bm.kinds...)
				b.ReportMetric(f.bytesPerRunner, "bytes/runner")
				b.ReportMetric(float64(f.goroutines)/float64(10_000*len(bm.kinds)), "goroutines/runner")
				b.ReportMetric(f.stop.Seconds(), "stop-s")
			}
		})
	}
}

// TestDaemonsWorkload keeps the benchmark's workload working in `make
// test`, at a small size; it checks that every runner started and that
// the stop took every goroutine with it, not how fast anything was.
func TestDaemonsWorkload(t *testing.T) {
	goroutines := runtime.NumGoroutine()
	f := runDaemons(t, 50, blockingDaemon, hourlyTimer)
	if f.goroutines < 100 {
		t.Errorf("%d goroutines for 100 daemons and timers, want one each", f.goroutines)
	}
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > goroutines && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if left := runtime.NumGoroutine() - goroutines; left > 0 {
		t.Errorf("%d goroutines left after the stop", left)
	}
}
