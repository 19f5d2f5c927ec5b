package bench

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/test/bench/internal/kex"
	"github.com/kopf-go/kopf/test/bench/internal/requests"
)

// The variants of a workload: kopf-go's engine for the typed kind in a
// manager, kopf-go as the README's quick start (ForKind, unstructured,
// the standalone runner), the hand-written baseline reconciler for typed
// and for unstructured objects, and the ceiling, a plain client that
// makes the same writes with no watching at all.
const (
	variantKopf                 = "kopf"
	variantForKind              = "forkind"
	variantBaseline             = "baseline"
	variantBaselineUnstructured = "baseline-unstructured"
	variantCeiling              = "ceiling"
)

// operators are the variants that run an operator process.
var operators = []string{variantKopf, variantForKind, variantBaseline, variantBaselineUnstructured}

// counterpart is the hand-written baseline that a kopf-go variant is held
// against: the typed one for typed objects, the unstructured one for the
// quick start's.
func counterpart(variant string) string {
	if variant == variantForKind {
		return variantBaselineUnstructured
	}
	return variantBaseline
}

// isKopf tells kopf-go's variants.
func isKopf(variant string) bool {
	return variant == variantKopf || variant == variantForKind || variant == variantForKindTraced
}

// phaseTimeout bounds every wait for the operator; a slower phase is a
// failure, not a figure.
const phaseTimeout = 10 * time.Minute

// lastHandledKey is the annotation in which a variant records the last
// handled spec.
func lastHandledKey(variant string) string {
	if isKopf(variant) || variant == variantExternal {
		return kex.KopfLastHandled
	}
	return kex.LastHandled
}

// newClient is a client of the driver's, counting its requests in counter
// if one is given.
func newClient(tb testing.TB, counter *requests.Counter) client.Client {
	tb.Helper()
	cfg := driverConfig()
	if counter != nil {
		counter.Instrument(cfg)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme(tb)})
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// forEach runs fn for 0..n-1 on the given number of goroutines (n of
// them if workers is 0), and returns the first error.
func forEach(n, workers int, fn func(i int) error) error {
	if workers <= 0 || workers > n {
		workers = n
	}
	var (
		wg    sync.WaitGroup
		next  = make(chan int)
		mu    sync.Mutex
		first error
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := fn(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return first
}

// bulkWorkers is how many requests at once the driver makes when it
// fills a namespace before the measured part of a workload.
const bulkWorkers = 64

func createAll(tb testing.TB, c client.Client, namespace string, n, workers int) {
	tb.Helper()
	if err := forEach(n, workers, func(i int) error { return c.Create(context.Background(), kex.New(namespace, i)) }); err != nil {
		tb.Fatalf("create the objects: %v", err)
	}
}

func mergePatch(c client.Client, obj client.Object, patch string) error {
	return c.Patch(context.Background(), obj, client.RawPatch(types.MergePatchType, []byte(patch)))
}

func setCounter(c client.Client, namespace string, i, counter int) error {
	return mergePatch(c, kex.New(namespace, i), fmt.Sprintf(`{"spec":{"counter":%d}}`, counter))
}

// lifecycleFigures are what one run of the lifecycle workload measures.
type lifecycleFigures struct {
	// handled, updated and gone are the phases' wall-clock: from the first
	// create (update, delete) until every object is handled (handled at
	// the new counter, gone).
	handled, updated, gone time.Duration
	// cpu is the operator's CPU time over the whole lifecycle, seconds;
	// 0 for the ceiling.
	cpu float64
	// allocated is what the operator allocated over the lifecycle, bytes
	// and objects.
	allocated, mallocs uint64
	// requests are the operator's (or the ceiling's) requests over the
	// whole lifecycle.
	requests map[string]int
	calls    map[string]int
	stale    int
}

// lifecycle runs workloads 1 to 3 for one variant: n objects created at
// once and handled (a create handler with a small result, and the
// finalizer for the delete handler), their spec updated once and handled,
// and deleted.
func lifecycle(tb testing.TB, variant string, n int) lifecycleFigures {
	tb.Helper()
	ns := fixtures.env.Namespace(tb)
	driver := newClient(tb, nil)
	var op *operatorProcess
	if variant == variantExternal {
		// Its sentinel object is gone before the observer starts.
		op = startExternal(tb, ns)
	}
	obs := observe(tb, ns, lastHandledKey(variant))
	var f lifecycleFigures
	if variant == variantCeiling {
		f = ceilingLifecycle(tb, driver, obs, ns, n)
	} else {
		if op == nil {
			op = startOperator(tb, variant, ns)
		}
		before := op.read(tb, "")
		f = operatorLifecycle(tb, driver, obs, ns, n)
		op.settle(tb)
		after := op.read(tb, "")
		f.cpu = after.CPU - before.CPU
		f.allocated, f.mallocs = after.TotalAlloc-before.TotalAlloc, after.Mallocs-before.Mallocs
		f.requests = subtract(after.Requests, before.Requests)
		f.calls = subtract(after.Calls, before.Calls)
		f.stale = after.Stale - before.Stale
		op.stop(tb)
		if *verbose {
			tb.Logf("the %s operator's requests in the lifecycle: %v", variant, f.requests)
		}
	}
	return f
}

func operatorLifecycle(tb testing.TB, driver client.Client, obs *observer, ns string, n int) lifecycleFigures {
	tb.Helper()
	var f lifecycleFigures
	begin := time.Now()
	createAll(tb, driver, ns, n, 0)
	f.handled = obs.await(tb, "all are handled", phaseTimeout, handledAll(n, 0)).Sub(begin)

	begin = time.Now()
	if err := forEach(n, 0, func(i int) error { return setCounter(driver, ns, i, 1) }); err != nil {
		tb.Fatalf("update the objects: %v", err)
	}
	f.updated = obs.await(tb, "all updates are handled", phaseTimeout, handledAll(n, 1)).Sub(begin)

	begin = time.Now()
	if err := forEach(n, 0, func(i int) error { return driver.Delete(context.Background(), kex.New(ns, i)) }); err != nil {
		tb.Fatalf("delete the objects: %v", err)
	}
	f.gone = obs.await(tb, "all are gone", phaseTimeout, goneAll(n)).Sub(begin)
	return f
}

// ceilingLifecycle makes the operators' writes itself, right after the
// driver's own requests, for all objects at once: the finalizer, the
// result in status, the last-handled annotation; the annotation again
// after the update; the finalizer's removal after the deletion.
func ceilingLifecycle(tb testing.TB, driver client.Client, obs *observer, ns string, n int) lifecycleFigures {
	tb.Helper()
	counter := &requests.Counter{}
	writer := newClient(tb, counter)
	annotate := func(i, counter int) error {
		spec := kex.New(ns, i).Spec
		spec.Counter = counter
		return mergePatch(writer, kex.New(ns, i), fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, kex.LastHandled, kex.LastHandledOf(spec)))
	}
	var f lifecycleFigures
	begin := time.Now()
	err := forEach(n, 0, func(i int) error {
		obj := kex.New(ns, i)
		if err := driver.Create(context.Background(), obj); err != nil {
			return err
		}
		if err := mergePatch(writer, obj, fmt.Sprintf(`{"metadata":{"finalizers":[%q]}}`, kex.Finalizer)); err != nil {
			return err
		}
		status := kex.New(ns, i)
		if err := writer.Status().Patch(context.Background(), status, client.RawPatch(types.MergePatchType, []byte(`{"status":{"create_fn":{"message":"created"}}}`))); err != nil {
			return err
		}
		return annotate(i, 0)
	})
	if err != nil {
		tb.Fatalf("the ceiling's creation: %v", err)
	}
	f.handled = obs.await(tb, "all are handled", phaseTimeout, handledAll(n, 0)).Sub(begin)

	begin = time.Now()
	if err := forEach(n, 0, func(i int) error {
		if err := setCounter(driver, ns, i, 1); err != nil {
			return err
		}
		return annotate(i, 1)
	}); err != nil {
		tb.Fatalf("the ceiling's update: %v", err)
	}
	f.updated = obs.await(tb, "all updates are handled", phaseTimeout, handledAll(n, 1)).Sub(begin)

	begin = time.Now()
	if err := forEach(n, 0, func(i int) error {
		if err := driver.Delete(context.Background(), kex.New(ns, i)); err != nil {
			return err
		}
		return mergePatch(writer, kex.New(ns, i), `{"metadata":{"finalizers":null}}`)
	}); err != nil {
		tb.Fatalf("the ceiling's deletion: %v", err)
	}
	f.gone = obs.await(tb, "all are gone", phaseTimeout, goneAll(n)).Sub(begin)
	f.requests = counter.Counts()
	return f
}

// latencyFigures: workload 4.
type latencyFigures struct{ p50, p99 time.Duration }

// latency fills a namespace with present objects, starts the operator,
// lets it handle them, then creates probes objects one by one, spaced
// out, and measures from each one's create request to its create
// handler's first call.
func latency(tb testing.TB, variant string, present, probes int) latencyFigures {
	tb.Helper()
	ns := fixtures.env.Namespace(tb)
	driver := newClient(tb, nil)
	obs := observe(tb, ns, lastHandledKey(variant))
	createAll(tb, driver, ns, present, bulkWorkers)
	op := startOperator(tb, variant, ns)
	obs.await(tb, "the present objects are handled", phaseTimeout, handledAll(present, 0))
	sent := map[string]time.Time{}
	for i := present; i < present+probes; i++ {
		obj := kex.New(ns, i)
		sent[obj.Name] = time.Now()
		if err := driver.Create(context.Background(), obj); err != nil {
			tb.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	obs.await(tb, "the probes are handled", phaseTimeout, handledAll(present+probes, 0))
	first := op.read(tb, "first=1").FirstCreate
	op.stop(tb)
	var latencies []time.Duration
	for name, at := range sent {
		called, ok := first[name]
		if !ok {
			tb.Fatalf("the %s operator has no call of the create handler for %s", variant, name)
		}
		latencies = append(latencies, time.Unix(0, called).Sub(at))
	}
	return latencyFigures{p50: percentile(latencies, 50), p99: percentile(latencies, 99)}
}

// memoryFigures: workloads 5 and 7.
type memoryFigures struct {
	// heap is the heap in use (spans), live the live objects in it.
	heap, live, stacks, rss uint64
	daemons                 int64
	stop                    time.Duration
}

// memory starts the operator, has it handle n objects (with a daemon each
// if daemons is set), and measures its memory once all are handled, after
// a collection; then it stops the operator and times its exit.
func memory(tb testing.TB, variant string, n int, daemons bool) memoryFigures {
	tb.Helper()
	ns := fixtures.env.Namespace(tb)
	driver := newClient(tb, nil)
	obs := observe(tb, ns, lastHandledKey(variant))
	extra := []string{heapProfiled}
	if daemons {
		extra = append(extra, "--daemons")
	}
	var op *operatorProcess
	if variant == variantExternal {
		op = startExternal(tb, ns)
	} else {
		op = startOperator(tb, variant, ns, extra...)
	}
	createAll(tb, driver, ns, n, bulkWorkers)
	obs.await(tb, "all are handled", phaseTimeout, handledAll(n, 0))
	if daemons {
		deadline := time.Now().Add(phaseTimeout)
		for op.read(tb, "").Daemons < int64(n) {
			if time.Now().After(deadline) {
				tb.Fatalf("the daemons did not all start:\n%s", op.tail())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	op.settle(tb)
	s := op.read(tb, "gc=1")
	f := memoryFigures{heap: s.HeapInuse, live: s.HeapAlloc, stacks: s.StackInuse, rss: s.RSS, daemons: s.Daemons}
	f.stop = op.stop(tb)
	return f
}

// rapidFigures: workload 6.
type rapidFigures struct {
	callsPerChange float64
	stale          int
}

// rapidUpdates has n handled objects updated `updates` times each, as
// fast as the driver can, and counts the update handler's calls and the
// calls on stale bodies.
func rapidUpdates(tb testing.TB, variant string, n, updates int) rapidFigures {
	tb.Helper()
	ns := fixtures.env.Namespace(tb)
	driver := newClient(tb, nil)
	obs := observe(tb, ns, lastHandledKey(variant))
	op := startOperator(tb, variant, ns)
	createAll(tb, driver, ns, n, bulkWorkers)
	obs.await(tb, "all are handled", phaseTimeout, handledAll(n, 0))
	before := op.read(tb, "")
	if err := forEach(n, bulkWorkers, func(i int) error {
		for counter := 1; counter <= updates; counter++ {
			if err := setCounter(driver, ns, i, counter); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		tb.Fatalf("update the objects: %v", err)
	}
	obs.await(tb, "the last updates are handled", phaseTimeout, handledAll(n, updates))
	after := op.read(tb, "")
	op.stop(tb)
	return rapidFigures{
		callsPerChange: float64(after.Calls["update"]-before.Calls["update"]) / float64(n*updates),
		stale:          after.Stale,
	}
}

// subtract returns a - b per key.
func subtract(a, b map[string]int) map[string]int {
	out := map[string]int{}
	for k, v := range a {
		if d := v - b[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// percentile returns the p-th percentile (nearest rank) of ds.
func percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	sorted := slices.Clone(ds)
	slices.Sort(sorted)
	rank := (p*len(sorted) + 99) / 100
	return sorted[max(rank, 1)-1]
}
