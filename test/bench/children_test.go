package bench

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/handlers"
	"github.com/kopf-go/kopf/pkg/cause"
	"github.com/kopf-go/kopf/pkg/hierarchies"
	"github.com/kopf-go/kopf/pkg/kopftest"
	"github.com/kopf-go/kopf/test/bench/internal/requests"
)

// childrenObjects is how many owners the children workload makes.
var childrenObjects = flag.Int("children-objects", 100, "BenchmarkChildRestore: owners (and children) per run")

// childrenFigures are one run's: how long each deleted child took to be
// put back, and the operator's requests while the children were deleted
// and put back.
type childrenFigures struct {
	restores []time.Duration
	requests map[string]int
}

// childrenRestore runs examples/20-children's handlers in-process over n
// owners, each with its ConfigMap, then deletes the children one at a
// time and times each until it is back (polled every 2 ms).
func childrenRestore(tb testing.TB, n int) childrenFigures {
	tb.Helper()
	setup(tb)
	ns := fixtures.env.Namespace(tb)
	driver := newClient(tb, nil)
	reg := handlers.NewRegistry()
	kind := handlers.ForKind(reg, "kopf.dev", "v1", "KopfExample")
	makeChild := func(ctx context.Context, obj *unstructured.Unstructured) error {
		field, _, _ := unstructured.NestedString(obj.Object, "spec", "field")
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: obj.GetName() + "-child"}, Data: map[string]string{"field": field}}
		if err := hierarchies.Adopt(cm, obj, hierarchies.Strict()); err != nil {
			return err
		}
		if err := handlers.Client(ctx).Create(ctx, cm); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		return nil
	}
	handlers.OnCreate(kind, "create_fn", func(ctx context.Context, obj *unstructured.Unstructured, _ *cause.Change) (any, error) {
		return nil, makeChild(ctx, obj)
	})
	handlers.OnChild(handlers.Children[*corev1.ConfigMap](kind), "restore_fn",
		func(ctx context.Context, obj *unstructured.Unstructured, _ *corev1.ConfigMap, c *cause.Child) error {
			if c.Reason != cause.ChildDeleted {
				return nil
			}
			return makeChild(ctx, obj)
		})
	counter := &requests.Counter{}
	cfg := rest.CopyConfig(fixtures.env.Config)
	counter.Instrument(cfg)
	op := fixtures.env.StartOperator(tb, ns, reg, handlers.Options{Standalone: true}, kopftest.WithConfig(cfg))
	createAll(tb, driver, ns, n, bulkWorkers)
	ctx := context.Background()
	child := func(i int) *corev1.ConfigMap {
		cm := &corev1.ConfigMap{}
		err := driver.Get(ctx, types.NamespacedName{Namespace: ns, Name: fmt.Sprintf("kex-%05d-child", i)}, cm)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			tb.Fatal(err)
		}
		return cm
	}
	kopftest.Eventually(tb, "every child is made", 5*time.Minute, func() bool {
		list := &corev1.ConfigMapList{}
		if err := driver.List(ctx, list, client.InNamespace(ns), client.HasLabels{hierarchies.OwnerKindLabel}); err != nil {
			tb.Fatal(err)
		}
		return len(list.Items) == n
	})
	before := counter.Counts()
	figures := childrenFigures{}
	for i := range n {
		first := child(i)
		start := time.Now()
		if err := driver.Delete(ctx, first); err != nil {
			tb.Fatal(err)
		}
		for {
			if cm := child(i); cm != nil && cm.UID != first.UID {
				break
			}
			if time.Since(start) > time.Minute {
				tb.Fatalf("the child %d was not put back within a minute", i)
			}
			time.Sleep(2 * time.Millisecond)
		}
		figures.restores = append(figures.restores, time.Since(start))
	}
	figures.requests = difference(counter.Counts(), before)
	op.Stop(tb)
	return figures
}

// BenchmarkChildRestore measures how soon a child handler puts back a
// deleted child, and what it costs in requests (docs/benchmarks.md,
// "Children").
func BenchmarkChildRestore(b *testing.B) {
	var f childrenFigures
	for b.Loop() {
		f = childrenRestore(b, *childrenObjects)
	}
	sorted := slices.Clone(f.restores)
	slices.Sort(sorted)
	at := func(q float64) time.Duration { return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))] }
	b.ReportMetric(float64(at(0.5).Microseconds())/1000, "ms-median")
	b.ReportMetric(float64(at(0.99).Microseconds())/1000, "ms-p99")
	// Printed, not logged: the operator's own log lines fill the
	// benchmark's log past what go test shows.
	fmt.Printf("restores of %d children: median %s, p90 %s, p99 %s, max %s\n", len(sorted), at(0.5), at(0.9), at(0.99), sorted[len(sorted)-1])
	verbs := slices.Sorted(maps.Keys(f.requests))
	for _, verb := range verbs {
		fmt.Printf("  %s: %.2f per restore\n", verb, float64(f.requests[verb])/float64(len(sorted)))
	}
}

// TestChildRestoreWorkload runs the workload small, so that it cannot
// rot: every deleted child comes back, by one create each.
func TestChildRestoreWorkload(t *testing.T) {
	setup(t)
	kopftest.NoLeaks(t)
	const n = 3
	f := childrenRestore(t, n)
	if len(f.restores) != n {
		t.Fatalf("%d restores, want %d", len(f.restores), n)
	}
	if got := f.requests["create configmaps"]; got != n {
		t.Errorf("the operator created %d ConfigMaps while %d were deleted, want %d: %v", got, n, n, f.requests)
	}
}
