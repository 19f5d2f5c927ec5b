package integration

import (
	"context"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kopf-go/kopf/handlers"
)

// A handler's own changes (labels, annotations, spec, status) travel with
// the framework's in the same cycle's writes; a map result merges into
// status.<id>, other results replace it; the handler's logger is in ctx.
func TestHandlerPatchResultsAndLogger(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	reg, kind := kex()
	handlers.OnCreate(kind, "create_fn", func(ctx context.Context, obj *unstructured.Unstructured, c *handlers.Cause) (any, error) {
		logr.FromContextOrDiscard(ctx).Info("Something was logged here.")
		c.Patch.SetLabel("patched", "yes")
		c.Patch.SetAnnotation("patched.example.com/by", c.HandlerID)
		c.Patch.Set("from-handler", "spec", "extra")
		c.Patch.SetStatus("custom", map[string]any{"kept": true})
		return map[string]any{"first": 1}, nil
	})
	handlers.OnUpdate(kind, "update_fn", func(ctx context.Context, obj *unstructured.Unstructured, c *handlers.Cause) (any, error) {
		return map[string]any{"second": 2}, nil
	}, handlers.Field("spec.field"))
	handlers.OnUpdate(kind, "scalar_fn", func(ctx context.Context, obj *unstructured.Unstructured, c *handlers.Cause) (any, error) {
		return []string{"a", "b"}, nil
	}, handlers.Field("spec.field"))
	op := env.StartOperator(t, ns, reg, handlers.Options{})
	create(t, exampleObject(t, ns))
	eventually(t, "creation is handled", func() bool { return op.Logs.Count("Creation is processed: 1 succeeded; 0 failed.") == 1 })
	if op.Logs.Count("Something was logged here.") != 1 {
		t.Error("the handler's log line did not reach the operator's logger")
	}

	mergePatch(t, ns, "kopf-example-1", `{"status":{"update_fn/spec.field":{"old":"kept"}}}`, true)
	mergePatch(t, ns, "kopf-example-1", `{"spec":{"field":"changed"}}`, false)
	eventually(t, "the update is handled", func() bool { return op.Logs.Count("Updating is processed: 2 succeeded; 0 failed.") == 1 })

	obj := get(t, ns, "kopf-example-1")
	if obj.GetLabels()["patched"] != "yes" || obj.GetAnnotations()["patched.example.com/by"] != "create_fn" {
		t.Errorf("labels %v, annotations %v: the handler's patch is missing", obj.GetLabels(), obj.GetAnnotations())
	}
	if extra, _, _ := unstructured.NestedString(obj.Object, "spec", "extra"); extra != "from-handler" {
		t.Errorf("spec.extra = %q", extra)
	}
	want := map[string]any{
		"create_fn":            map[string]any{"first": int64(1)},
		"custom":               map[string]any{"kept": true},
		"update_fn/spec.field": map[string]any{"old": "kept", "second": int64(2)},
		"scalar_fn/spec.field": []any{"a", "b"},
	}
	if diff := cmp.Diff(want, obj.Object["status"]); diff != "" {
		t.Errorf("status -want +got:\n%s", diff)
	}
	// The handler's own spec change is a change of the essence like any
	// other: a later cycle sees it and stores it in the diffbase.
	diffbase := obj.GetAnnotations()["kopf.zalando.org/last-handled-configuration"]
	if want := `"extra":"from-handler"`; !strings.Contains(diffbase, want) {
		t.Errorf("diffbase %s lacks %s", diffbase, want)
	}
}
