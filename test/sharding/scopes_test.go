package sharding

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/internal/sharding"
	"github.com/kopf-go/kopf/pkg/kopftest"
)

// A ring whose replicas serve a pattern shares the objects of a namespace
// that matches it once it appears: the assigner watches the new namespace,
// each object is owned as hashed, and handled once, by its owner.
func TestRingServesANamespaceThatMatchesLater(t *testing.T) {
	kopftest.NoLeaks(t)
	r := newRing(t)
	r.namespaces = []string{r.ns + "*"}
	for _, name := range []string{"a", "b"} {
		r.start(name)
	}
	later := r.ns + "-2"
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: later}}
	if err := env.Client.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), ns) })
	names := make([]string, 12)
	for i := range names {
		names[i] = fmt.Sprintf("later-%02d", i)
	}
	r.parallel(names, func(name string) error {
		obj := r.object(name)
		obj.SetNamespace(later)
		obj.Object["spec"] = map[string]any{"field": "v0"}
		return env.Client.Create(context.Background(), obj)
	})
	live := r.liveMembers()
	kopftest.Eventually(t, "every object in the new namespace is owned as hashed and handled once", time.Minute, func() bool {
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion("kopf.dev/v1")
		list.SetKind("KopfExampleList")
		if err := env.Client.List(context.Background(), list, client.InNamespace(later)); err != nil {
			t.Fatal(err)
		}
		if len(list.Items) != len(names) {
			return false
		}
		for _, obj := range list.Items {
			p := r.keys().Placement(obj.GetLabels(), obj.GetAnnotations())
			if want := sharding.Owner(sharding.ObjectKey(obj.GetNamespace(), obj.GetName()), live); p.Owner != want || len(r.det.creates(obj.GetName())) != 1 {
				return false
			}
		}
		return true
	})
	for _, name := range names {
		if got := r.det.creates(name); len(got) != 1 || r.member(got[0]) == "" {
			t.Errorf("%s: created by %v, want once by a member", name, got)
		}
	}
	if o := r.det.overlapping(); len(o) > 0 {
		t.Errorf("objects handled by two replicas at once: %v", o)
	}
}
