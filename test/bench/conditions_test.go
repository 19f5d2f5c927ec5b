package bench

import (
	"context"
	"flag"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/handlers"
	"github.com/kopf-go/kopf/pkg/kopftest"
	"github.com/kopf-go/kopf/pkg/progress"
	"github.com/kopf-go/kopf/test/bench/internal/requests"

	"github.com/kopf-go/kopf/pkg/cause"
)

// conditionsObjects is how many objects the conditions workload creates.
var conditionsObjects = flag.Int("conditions-objects", 200, "BenchmarkConditionsWrites: objects per run")

// conditionsVariant is one operator of the conditions workload.
type conditionsVariant struct {
	name string
	// conditions: handlers.Conditions on the kind.
	conditions bool
	// bare: progress in annotations only (as by default, explicitly) and a handler without a
	// result, so that the cycle makes no status write of its own.
	bare bool
}

// conditionsVariants are the quick start (a result, the default
// progress storage) and the bare handler, each without and with
// conditions.
var conditionsVariants = []conditionsVariant{
	{"quick start", false, false}, {"quick start + conditions", true, false},
	{"bare", false, true}, {"bare + conditions", true, true},
}

// conditionsWrites runs the variant in-process over n new objects and
// counts the operator's requests from the first creation until every
// object is handled (its diff-base written: the main patch goes after
// the status patch, so the conditions are written by then too).
func conditionsWrites(tb testing.TB, n int, v conditionsVariant) contentionFigures {
	tb.Helper()
	setup(tb)
	ns := fixtures.env.Namespace(tb)
	driver := newClient(tb, nil)
	reg := handlers.NewRegistry()
	kind := handlers.ForKind(reg, "kopf.dev", "v1", "KopfExample")
	if v.conditions {
		handlers.Conditions(kind)
	}
	handlers.OnCreate(kind, "create_fn", func(ctx context.Context, obj *unstructured.Unstructured, _ *cause.Change) (any, error) {
		if v.bare {
			return nil, nil
		}
		return map[string]any{"message": "hello world"}, nil
	})
	opts := handlers.Options{Standalone: true}
	if v.bare {
		opts.ProgressStorage = progress.NewAnnotations()
	}
	counter := &requests.Counter{}
	cfg := rest.CopyConfig(fixtures.env.Config)
	counter.Instrument(cfg)
	op := fixtures.env.StartOperator(tb, ns, reg, opts, kopftest.WithConfig(cfg))
	before := counter.Counts()
	createAll(tb, driver, ns, n, bulkWorkers)
	kopftest.Eventually(tb, "every object is handled", 5*time.Minute, func() bool {
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion("kopf.dev/v1")
		list.SetKind("KopfExampleList")
		if err := driver.List(context.Background(), list, client.InNamespace(ns)); err != nil {
			tb.Fatal(err)
		}
		done := 0
		for _, o := range list.Items {
			if o.GetAnnotations()["kopf.zalando.org/last-handled-configuration"] != "" {
				done++
			}
		}
		return done == n
	})
	after := counter.Counts()
	op.Stop(tb)
	return contentionFigures{objects: n, requests: difference(after, before)}
}

// BenchmarkConditionsWrites measures what handlers.Conditions costs in
// requests per object (docs/benchmarks.md, "Conditions").
func BenchmarkConditionsWrites(b *testing.B) {
	figures := map[string]contentionFigures{}
	for _, v := range conditionsVariants {
		b.Run(v.name, func(b *testing.B) {
			for b.Loop() {
				figures[v.name] = conditionsWrites(b, *conditionsObjects, v)
			}
			f := figures[v.name]
			b.ReportMetric(f.per(f.requests["patch kopfexamples"]+f.requests["patch kopfexamples/status"]), "writes/object")
		})
	}
	b.Logf("| variant | patch kopfexamples | patch kopfexamples/status | all requests |")
	b.Logf("|---|---:|---:|---:|")
	for _, v := range conditionsVariants {
		f := figures[v.name]
		if f.objects == 0 {
			continue
		}
		all := 0
		for _, c := range f.requests {
			all += c
		}
		b.Logf("| %s | %.2f | %.2f | %.2f |", v.name, f.per(f.requests["patch kopfexamples"]), f.per(f.requests["patch kopfexamples/status"]), f.per(all))
	}
}

// TestConditionsWritesWorkload runs the workload small, so that it cannot
// rot, and holds what the benchmark shows: the quick start writes as
// often with conditions as without; the bare handler one status patch
// more per object.
func TestConditionsWritesWorkload(t *testing.T) {
	setup(t) // the package's control plane, started once, outlives the test
	kopftest.NoLeaks(t)
	const n = 5
	got := map[string]map[string]int{}
	for _, v := range conditionsVariants {
		got[v.name] = conditionsWrites(t, n, v).requests
	}
	for _, pair := range [][2]string{{"quick start", "quick start + conditions"}, {"bare", "bare + conditions"}} {
		off, on := got[pair[0]], got[pair[1]]
		if off["patch kopfexamples"] != on["patch kopfexamples"] {
			t.Errorf("%s: %d object patches, %s: %d; want the same", pair[0], off["patch kopfexamples"], pair[1], on["patch kopfexamples"])
		}
	}
	if off, on := got["quick start"]["patch kopfexamples/status"], got["quick start + conditions"]["patch kopfexamples/status"]; off != on {
		t.Errorf("the quick start: %d status patches without conditions, %d with; want the same", off, on)
	}
	if off, on := got["bare"]["patch kopfexamples/status"], got["bare + conditions"]["patch kopfexamples/status"]; off != 0 || on != n {
		t.Errorf("the bare handler: %d status patches without conditions, %d with; want 0 and %d", off, on, n)
	}
}
