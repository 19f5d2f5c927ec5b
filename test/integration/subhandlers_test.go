package integration

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kopf-go/kopf/handlers"

	"github.com/kopf-go/kopf/pkg/cause"
)

// Kopf's acceptance item 14 (example 07): a create handler registers one
// sub-handler per item; each has its own progress record and result; the
// parent keeps the sub-handlers' ids and is called again until they are
// done; at the end everything is purged.
func TestSubhandlers(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	seenVersions := recordVersions(t, ns)
	reg, kind := kex()
	var seen calls
	handlers.OnCreate(kind, "create_fn", func(ctx context.Context, obj *unstructured.Unstructured, c *cause.Change) (any, error) {
		seen.add(c)
		items, _, _ := unstructured.NestedStringSlice(obj.Object, "spec", "items")
		for _, item := range items {
			if err := handlers.Subhandler(ctx, item, func(ctx context.Context, obj *unstructured.Unstructured, c *cause.Change) (any, error) {
				seen.add(c)
				if item == "item2" && c.Retry == 0 {
					return nil, handlers.Temporary(errors.New("not yet"), 200*time.Millisecond)
				}
				return map[string]any{"item": item}, nil
			}); err != nil {
				return nil, err
			}
		}
		return nil, nil
	})
	op := env.StartOperator(t, ns, reg, handlers.Options{})
	create(t, exampleObject(t, ns))
	eventually(t, "creation is processed", func() bool { return op.Logs.Count("Creation is processed: 1 succeeded; 0 failed.") == 1 })

	var order []string
	for _, c := range seen.all() {
		order = append(order, c.ID)
	}
	// item1 first; then item2 fails once; the parent is called each cycle.
	want := []string{"create_fn", "create_fn/item1", "create_fn", "create_fn/item2", "create_fn", "create_fn/item2"}
	if diff := cmp.Diff(want, order); diff != "" {
		t.Errorf("calls -want +got:\n%s", diff)
	}
	// The log line comes before the cycle's patch: wait for the patch,
	// which stores the diffbase.
	var obj *unstructured.Unstructured
	eventually(t, "the diffbase is stored", func() bool {
		obj = get(t, ns, "kopf-example-1")
		return obj.GetAnnotations()["kopf.zalando.org/last-handled-configuration"] != ""
	})
	status := obj.Object["status"].(map[string]any)
	if diff := cmp.Diff(map[string]any{"item": "item1"}, status["create_fn/item1"]); diff != "" {
		t.Errorf("status.create_fn/item1 -want +got:\n%s", diff)
	}
	if diff := cmp.Diff(map[string]any{"item": "item2"}, status["create_fn/item2"]); diff != "" {
		t.Errorf("status.create_fn/item2 -want +got:\n%s", diff)
	}
	var parentRecord map[string]any
	sawChildren := map[string]bool{}
	for _, v := range seenVersions.all() {
		for key, value := range v.GetAnnotations() {
			if strings.HasPrefix(key, "kopf.zalando.org/create_fn.item") {
				sawChildren[key] = true
			}
			if key == "kopf.zalando.org/create_fn" && strings.Contains(value, "subrefs") {
				parentRecord = decodeRecord(t, value)
			}
		}
	}
	if !sawChildren["kopf.zalando.org/create_fn.item1"] || !sawChildren["kopf.zalando.org/create_fn.item2"] {
		t.Errorf("the sub-handlers' records were not written: %v", sawChildren)
	}
	if parentRecord == nil {
		t.Fatal("no version of the parent's record had subrefs")
	}
	if diff := cmp.Diff([]any{"create_fn/item1", "create_fn/item2"}, parentRecord["subrefs"]); diff != "" {
		t.Errorf("the parent's subrefs -want +got:\n%s", diff)
	}
	if parentRecord["message"] != "None" {
		t.Errorf("the waiting parent's message = %v, want Kopf's None", parentRecord["message"])
	}
	for key := range obj.GetAnnotations() {
		if strings.HasPrefix(key, "kopf.zalando.org/create_fn") {
			t.Errorf("a record survived the end: %s", key)
		}
	}
	if len(op.Logs.Messages("Handler 'create_fn/item2' failed temporarily: not yet")) != 1 {
		t.Error("the sub-handler's failure was not logged")
	}
}

// Registering a sub-handler outside a change handler fails.
func TestSubhandlerOutsideAHandler(t *testing.T) {
	err := handlers.Subhandler(context.Background(), "x", func(context.Context, *unstructured.Unstructured, *cause.Change) (any, error) {
		return nil, nil
	})
	if err == nil {
		t.Error("a sub-handler was accepted outside a change handler")
	}
}
