package sharding

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/handlers"
	"github.com/kopf-go/kopf/pkg/cause"
	"github.com/kopf-go/kopf/pkg/hierarchies"
	"github.com/kopf-go/kopf/pkg/kopftest"
)

// In a ring, a child's handlers run on its owner's replica alone: every
// replica watches the children (of unstructured kind here), and the one
// whose share the owner is not finds no owner in its cache.
func TestChildHandlersRunOnTheOwnersReplica(t *testing.T) {
	kopftest.NoLeaks(t)
	r := newRing(t)
	var mu sync.Mutex
	heard := map[string][]string{} // child name → replicas that heard its deletion
	r.register = func(_ *handlers.Registry, res *handlers.Resource[*unstructured.Unstructured], name string) {
		configMaps := handlers.ChildrenKind(res, "", "v1", "ConfigMap")
		handlers.OnChild(configMaps, "deleted", func(ctx context.Context, owner, child *unstructured.Unstructured, c *cause.Child) error {
			if c.Reason == cause.ChildDeleted {
				mu.Lock()
				heard[child.GetName()] = append(heard[child.GetName()], name)
				mu.Unlock()
			}
			return nil
		})
	}
	heardOf := func(child string) []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), heard[child]...)
	}
	r.start("a")
	r.start("b")
	// 16 objects: all of them hash to one of the two replicas once in
	// 2^15 runs (8 did once in 128).
	names := r.createObjects(16)
	r.waitSettled(names, time.Minute)
	owner, _, _ := r.owners()
	onB := 0
	for _, name := range names {
		if owner[name] == r.member("b") {
			onB++
		}
	}
	if onB == 0 || onB == len(names) {
		t.Fatalf("%d of %d objects are b's: the test needs objects on both replicas", onB, len(names))
	}

	// Each child's creation, then its deletion, is heard by one replica
	// (the handler records deletions only) and skipped by the other.
	skipped := func() int {
		n := 0
		for _, rep := range r.replicas {
			n += rep.op.Logs.Count("The child's owner is not here (gone, or not served): nobody to tell.")
		}
		return n
	}
	ctx := context.Background()
	var made []*corev1.ConfigMap
	for _, name := range names {
		obj := r.object(name)
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			t.Fatal(err)
		}
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name + "-child"}}
		if err := hierarchies.Adopt(cm, obj, hierarchies.Strict()); err != nil {
			t.Fatal(err)
		}
		if err := env.Client.Create(ctx, cm); err != nil {
			t.Fatal(err)
		}
		made = append(made, cm)
	}
	kopftest.Eventually(t, "every creation is skipped by the other replica", 30*time.Second, func() bool { return skipped() >= len(names) })
	for _, cm := range made {
		if err := env.Client.Delete(ctx, cm); err != nil {
			t.Fatal(err)
		}
	}
	kopftest.Eventually(t, "every deletion is heard and skipped", 30*time.Second, func() bool {
		for _, name := range names {
			if len(heardOf(name+"-child")) == 0 {
				return false
			}
		}
		return skipped() >= 2*len(names)
	})
	for _, name := range names {
		want := r.replicaOf(owner[name])
		if got := heardOf(name + "-child"); len(got) != 1 || got[0] != want {
			t.Errorf("the deletion of %s-child was heard on %v, want once on its owner's replica %s", name, got, want)
		}
	}
}
