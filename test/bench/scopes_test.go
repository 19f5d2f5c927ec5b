package bench

import (
	"context"
	"fmt"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Sizes of the scopes benchmark: the cluster's namespaces, objects per
// namespace, and how many namespaces the operator serves.
const (
	scopeNamespaces = 20
	scopeObjects    = 100
	scopeServed     = 2
)

// BenchmarkNamespaceScopes measures the memory that the two ways of
// following served namespaces would hold (docs/scopes.md): informers per
// served namespace, as the engine's cache has (controller-runtime's
// DefaultNamespaces), against one cluster-wide watch whose objects are
// filtered on the client, which must receive and keep every object of
// the kind to filter it. Both drop managedFields, as the engine does.
func BenchmarkNamespaceScopes(b *testing.B) {
	setup(b)
	namespaces := scopesCluster(b)
	served := namespaces[:scopeServed]
	for b.Loop() {
		perNamespace := cacheHeap(b, served)
		clusterWide := cacheHeap(b, nil)
		b.ReportMetric(inMiB(perNamespace), "per-namespace-MiB")
		b.ReportMetric(inMiB(clusterWide), "cluster-wide-MiB")
		b.Logf("%d namespaces of %d objects, %d served: per-namespace informers hold %.2f MiB, one cluster-wide watch %.2f MiB (%.1f×)",
			scopeNamespaces, scopeObjects, scopeServed, inMiB(perNamespace), inMiB(clusterWide), float64(clusterWide)/float64(perNamespace))
	}
}

// scopesCluster creates the benchmark's namespaces and their objects.
func scopesCluster(b *testing.B) []string {
	b.Helper()
	s, err := schemeOnce()
	if err != nil {
		b.Fatal(err)
	}
	c, err := client.New(driverConfig(), client.Options{Scheme: s})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	var names []string
	for i := range scopeNamespaces {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "scopes-"}}
		if err := c.Create(ctx, ns); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = c.Delete(context.Background(), ns) })
		names = append(names, ns.Name)
		var wg sync.WaitGroup
		errs := make(chan error, scopeObjects)
		for j := range scopeObjects {
			wg.Go(func() {
				obj := exampleObject()
				obj.SetNamespace(ns.Name)
				obj.SetName(fmt.Sprintf("obj-%d-%d", i, j))
				if err := c.Create(ctx, obj); err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			b.Fatal(err)
		}
	}
	return names
}

// cacheHeap is the heap that a synced cache of the example kind holds,
// over the namespaces (none: the whole cluster).
func cacheHeap(b *testing.B, namespaces []string) uint64 {
	b.Helper()
	s, err := schemeOnce()
	if err != nil {
		b.Fatal(err)
	}
	opts := cache.Options{Scheme: s, DefaultTransform: cache.TransformStripManagedFields()}
	if len(namespaces) > 0 {
		opts.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range namespaces {
			opts.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	before := heapAndStacks()
	c, err := cache.New(driverConfig(), opts)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = c.Start(ctx) })
	defer wg.Wait()
	defer cancel()
	if _, err := c.GetInformer(ctx, exampleObject()); err != nil {
		b.Fatal(err)
	}
	if !c.WaitForCacheSync(ctx) {
		b.Fatal("the cache did not sync")
	}
	after := heapAndStacks()
	// Counted after the measure: a list holds copies of the objects.
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(exampleObject().GroupVersionKind())
	if err := c.List(ctx, list); err != nil {
		b.Fatal(err)
	}
	if want := scopeObjects * max(len(namespaces), 1); len(namespaces) > 0 && len(list.Items) != want {
		b.Fatalf("the cache holds %d objects, want %d", len(list.Items), want)
	}
	return after - before
}
