package integration

import (
	"context"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kopf-go/kopf/handlers"

	"github.com/kopf-go/kopf/pkg/cause"
)

const finalizer = "kopf.zalando.org/KopfFinalizerMarker"

// Kopf's acceptance items 2 and 3: with a delete handler, the finalizer is
// added in a cycle of its own before any handler runs, and on deletion the
// delete handler runs once, then the finalizer goes and so does the object,
// without any progress record ever being written.
func TestFinalizerFirstThenDeletion(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	seenVersions := recordVersions(t, ns)
	reg, kind := kex()
	var seen calls
	var finalizedAtCreate, deletingAtDelete bool
	handlers.OnCreate(kind, "create_fn", func(ctx context.Context, obj *unstructured.Unstructured, c *cause.Change) (any, error) {
		finalizedAtCreate = slices.Contains(obj.GetFinalizers(), finalizer)
		seen.add(c)
		return nil, nil
	})
	handlers.OnDelete(kind, "delete_fn", func(ctx context.Context, obj *unstructured.Unstructured, c *cause.Change) (any, error) {
		deletingAtDelete = obj.GetDeletionTimestamp() != nil
		seen.add(c)
		return nil, nil
	})
	op := env.StartOperator(t, ns, reg, handlers.Options{})

	create(t, exampleObject(t, ns))
	eventually(t, "creation is handled", func() bool {
		return len(seen.of("create_fn")) == 1 && op.Logs.Count("Creation is processed: 1 succeeded; 0 failed.") == 1
	})
	if !finalizedAtCreate {
		t.Error("the create handler ran before the finalizer was on the object")
	}
	first := seenVersions.all()[1] // [0] is the creation itself
	if !slices.Contains(first.GetFinalizers(), finalizer) || first.GetAnnotations()["kopf.zalando.org/last-handled-configuration"] != "" {
		t.Errorf("the first write must add only the finalizer; it left finalizers %v, annotations %v", first.GetFinalizers(), first.GetAnnotations())
	}
	if got := get(t, ns, "kopf-example-1").GetFinalizers(); !slices.Contains(got, finalizer) {
		t.Errorf("finalizers after creation = %v, want ours kept", got)
	}

	if err := env.Client.Delete(context.Background(), exampleObject(t, ns)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the object is gone", func() bool { return gone(t, ns, "kopf-example-1") })
	deletes := seen.of("delete_fn")
	if len(deletes) != 1 || deletes[0].Reason != cause.Delete || !deletingAtDelete {
		t.Errorf("delete handler calls = %+v (deleting: %v), want one with reason delete on a deleting object", deletes, deletingAtDelete)
	}
	for _, v := range seenVersions.all() {
		for key := range v.GetAnnotations() {
			if strings.HasPrefix(key, "kopf.zalando.org/") && key != "kopf.zalando.org/last-handled-configuration" {
				t.Errorf("a version carried the progress annotation %s; a single-cycle handling must leave none", key)
			}
		}
	}
}

// Finalizers of other controllers survive ours being added and removed.
func TestForeignFinalizersAreKept(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	reg, kind := kex()
	var seen calls
	handlers.OnDelete(kind, "delete_fn", seen.record)
	env.StartOperator(t, ns, reg, handlers.Options{})

	obj := exampleObject(t, ns)
	obj.SetFinalizers([]string{"example.com/other"})
	create(t, obj)
	eventually(t, "our finalizer is added", func() bool {
		return slices.Equal(get(t, ns, "kopf-example-1").GetFinalizers(), []string{"example.com/other", finalizer})
	})
	if err := env.Client.Delete(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
	eventually(t, "our finalizer is removed", func() bool {
		return slices.Equal(get(t, ns, "kopf-example-1").GetFinalizers(), []string{"example.com/other"})
	})
	if n := len(seen.of("delete_fn")); n != 1 {
		t.Errorf("delete_fn called %d times, want 1", n)
	}
	// Let the object go.
	fresh := get(t, ns, "kopf-example-1")
	fresh.SetFinalizers(nil)
	if err := env.Client.Update(context.Background(), fresh); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the object is gone", func() bool { return gone(t, ns, "kopf-example-1") })
}
