package sharding

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/handlers"
	"github.com/kopf-go/kopf/pkg/cause"
	"github.com/kopf-go/kopf/pkg/kopftest"
)

// finalizer is the engine's (and Kopf's) finalizer.
const finalizer = "kopf.zalando.org/KopfFinalizerMarker"

// An object deleted and created anew under its name while a handover
// moves the name to another member does not start there while its
// predecessor's handler still runs on the old owner (docs/sharding.md,
// "One object, one name"). The kind has a create handler only, which
// needs no finalizer: the ring's own finalizer keeps the name taken, so
// the API server refuses the new object (AlreadyExists) until the old
// owner has finished its handler and let the old object go.
func TestANameTakenAgainDuringAHandoverWaitsForItsPredecessor(t *testing.T) {
	kopftest.NoLeaks(t)
	r := newRing(t)
	r.ownHandlersOnly = true
	const handlerTime = 15 * time.Second // outlasts the joins of startHashing
	var mu sync.Mutex
	started := map[string][]string{} // by uid: the replicas whose create handler started
	r.register = func(_ *handlers.Registry, res *handlers.Resource[*unstructured.Unstructured], name string) {
		handlers.OnCreate(res, "create", func(ctx context.Context, obj *unstructured.Unstructured, _ *cause.Change) (any, error) {
			defer r.det.enter(obj.GetName(), name, "create")()
			mu.Lock()
			started[string(obj.GetUID())] = append(started[string(obj.GetUID())], name)
			mu.Unlock()
			select {
			case <-ctx.Done():
			case <-time.After(handlerTime):
			}
			return nil, nil
		})
	}
	r.start("a")
	names := r.createObjects(1)
	first := r.object(names[0])
	kopftest.Eventually(t, "the create handler of the first object runs on a", 30*time.Second, func() bool {
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(first), first); err != nil {
			return false
		}
		mu.Lock()
		defer mu.Unlock()
		return slices.Equal(started[string(first.GetUID())], []string{"a"})
	})
	if !slices.Contains(first.GetFinalizers(), finalizer) {
		t.Errorf("the object's handler runs with the finalizers %q, want %q among them", first.GetFinalizers(), finalizer)
	}
	next := r.startHashing(r.hashKey(names[0]), "a")

	if err := env.Client.Delete(context.Background(), r.object(names[0])); err != nil {
		t.Fatal(err)
	}
	refused := 0
	second := r.object(names[0])
	kopftest.Eventually(t, "the name is free for a new object", 2*handlerTime, func() bool {
		second = r.object(names[0])
		second.Object["spec"] = map[string]any{"field": "v1"}
		err := env.Client.Create(context.Background(), second)
		if apierrors.IsAlreadyExists(err) {
			refused++
		} else if err != nil {
			t.Fatal(err)
		}
		return err == nil
	})
	kopftest.Eventually(t, "the create handler of the new object starts on "+next, 30*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(started[string(second.GetUID())]) > 0
	})
	mu.Lock()
	defer mu.Unlock()
	if got := started[string(second.GetUID())]; !slices.Equal(got, []string{next}) {
		t.Errorf("the new object's create handler started on %v, want on %s", got, next)
	}
	if refused == 0 {
		t.Error("the API server took the new object at once: nothing kept the name while a's handler ran")
	}
	if o := r.det.overlapping(); len(o) > 0 {
		t.Errorf("executions overlapped: %v", o)
	}
	t.Logf("the name was refused %d times before a's handler of the old object ended", refused)
}
