package bench

import (
	"context"
	"flag"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/handlers"
	"github.com/kopf-go/kopf/pkg/kopftest"
	"github.com/kopf-go/kopf/test/bench/internal/requests"

	"github.com/kopf-go/kopf/pkg/cause"
)

// contendedObjects is how many objects the contention workload creates.
var contendedObjects = flag.Int("contended-objects", 200, "BenchmarkContendedWrites: objects per run")

// contentionFigures are one run's requests of the operator, per object.
type contentionFigures struct {
	objects  int
	requests map[string]int
}

func (f contentionFigures) per(n int) float64 { return float64(n) / float64(f.objects) }

// contendedWrites runs the quick start's kind in-process with a create
// handler that returns a result (written to /status); while each call
// runs, another writer changes its object's status if contended (as a
// controller that shares the status does; outside the essence, so that
// no change handler is due for it): the write then meets a version the
// cycle did not read. It counts the
// operator's requests from the first creation until every result is
// written.
func contendedWrites(tb testing.TB, n int, contended bool) contentionFigures {
	tb.Helper()
	setup(tb)
	ns := fixtures.env.Namespace(tb)
	driver := newClient(tb, nil)
	reg := handlers.NewRegistry()
	kind := handlers.ForKind(reg, "kopf.dev", "v1", "KopfExample")
	handlers.OnCreate(kind, "create_fn", func(ctx context.Context, obj *unstructured.Unstructured, _ *cause.Change) (any, error) {
		if contended {
			p := client.RawPatch(types.MergePatchType, []byte(`{"status":{"other-writer":"was here"}}`))
			if err := driver.Status().Patch(ctx, obj.DeepCopy(), p); err != nil {
				return nil, fmt.Errorf("the other writer: %w", err)
			}
		}
		return map[string]any{"message": "created"}, nil
	})
	counter := &requests.Counter{}
	cfg := rest.CopyConfig(fixtures.env.Config)
	counter.Instrument(cfg)
	op := fixtures.env.StartOperator(tb, ns, reg, handlers.Options{Standalone: true}, kopftest.WithConfig(cfg))
	// The rows count only the objects' patches and reads: what the
	// operator asks at its start (lists, watches, discovery) counts in
	// neither figure.
	before := counter.Counts()
	createAll(tb, driver, ns, n, bulkWorkers)
	kopftest.Eventually(tb, "every result is written", 5*time.Minute, func() bool {
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion("kopf.dev/v1")
		list.SetKind("KopfExampleList")
		if err := driver.List(context.Background(), list, client.InNamespace(ns)); err != nil {
			tb.Fatal(err)
		}
		done := 0
		for _, o := range list.Items {
			if _, found, _ := unstructured.NestedMap(o.Object, "status", "create_fn"); found &&
				o.GetAnnotations()["kopf.zalando.org/last-handled-configuration"] != "" {
				done++
			}
		}
		return done == n
	})
	after := counter.Counts()
	op.Stop(tb)
	return contentionFigures{objects: n, requests: difference(after, before)}
}

// difference is after's counts minus before's.
func difference(after, before map[string]int) map[string]int {
	out := map[string]int{}
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// BenchmarkContendedWrites measures what the writes' preconditions cost:
// the operator's requests per object when it is the object's only writer,
// and when another writer changes the object while its create handler
// runs, so that the result's /status patch meets a version the cycle did
// not read (docs/benchmarks.md, "Writes guarded by the object's
// identity").
func BenchmarkContendedWrites(b *testing.B) {
	figures := map[bool]contentionFigures{}
	for _, contended := range []bool{false, true} {
		name := map[bool]string{false: "alone", true: "contended"}[contended]
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				figures[contended] = contendedWrites(b, *contendedObjects, contended)
			}
		})
	}
	alone, contended := figures[false], figures[true]
	if alone.objects == 0 || contended.objects == 0 {
		return
	}
	rows := []struct {
		figure string
		count  func(map[string]int) int
	}{
		{"patch kopfexamples", func(c map[string]int) int { return c["patch kopfexamples"] }},
		{"patch kopfexamples/status", func(c map[string]int) int { return c["patch kopfexamples/status"] }},
		{"get kopfexamples", func(c map[string]int) int { return c["get kopfexamples"] }},
		{"conflicts (409)", requests.Conflicts},
	}
	b.Logf("requests of the operator per object, %d objects:", alone.objects)
	b.Logf("| figure | only writer | another writer while the handler runs |")
	b.Logf("|---|---:|---:|")
	for _, r := range rows {
		b.Logf("| %s | %.2f | %.2f |", r.figure, alone.per(r.count(alone.requests)), contended.per(r.count(contended.requests)))
	}
	b.Logf("only writer: %v", alone.requests)
	b.Logf("another writer: %v", contended.requests)
}

// TestContendedWritesWorkload runs the workload small, so that it cannot
// rot: every object's result is written, with and without another writer.
func TestContendedWritesWorkload(t *testing.T) {
	setup(t) // the package's control plane, started once, outlives the test
	kopftest.NoLeaks(t)
	for _, contended := range []bool{false, true} {
		f := contendedWrites(t, 5, contended)
		if f.requests["patch kopfexamples/status"] < 5 {
			t.Errorf("contended %v: %v, want a status patch per object at least", contended, f.requests)
		}
		// The other writer's change is what the guard meets: a conflict
		// per object, none without it.
		if conflicts := requests.Conflicts(f.requests); contended && conflicts < 5 || !contended && conflicts > 0 {
			t.Errorf("contended %v: %d conflicts in %v", contended, conflicts, f.requests)
		}
	}
}
