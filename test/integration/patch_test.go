package integration

import (
	"context"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kopf-go/kopf/handlers"

	"github.com/kopf-go/kopf/pkg/cause"
	"github.com/kopf-go/kopf/pkg/hierarchies"
)

// A handler's own changes (labels, annotations, spec, status) travel with
// the framework's in the same cycle's writes; a map result merges into
// status.<id>, other results replace it; the handler's logger is in ctx.
func TestHandlerPatchResultsAndLogger(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	reg, kind := kex()
	handlers.OnCreate(kind, "create_fn", func(ctx context.Context, obj *unstructured.Unstructured, c *cause.Change) (any, error) {
		logr.FromContextOrDiscard(ctx).Info("Something was logged here.")
		c.Patch.SetLabel("patched", "yes")
		c.Patch.SetAnnotation("patched.example.com/by", c.HandlerID)
		c.Patch.Set("from-handler", "spec", "extra")
		c.Patch.SetStatus("custom", map[string]any{"kept": true})
		return map[string]any{"first": 1}, nil
	})
	handlers.OnUpdate(kind, "update_fn", func(ctx context.Context, obj *unstructured.Unstructured, c *cause.Change) (any, error) {
		return map[string]any{"second": 2}, nil
	}, handlers.Field("spec.field"))
	handlers.OnUpdate(kind, "scalar_fn", func(ctx context.Context, obj *unstructured.Unstructured, c *cause.Change) (any, error) {
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
	// The line comes before the cycle's writes: wait for both, the
	// status one (the results) and then the main one (the diffbase).
	eventually(t, "the update's results and diffbase are written", func() bool {
		obj := get(t, ns, "kopf-example-1")
		_, found, _ := unstructured.NestedFieldNoCopy(obj.Object, "status", "scalar_fn/spec.field")
		return found && strings.Contains(obj.GetAnnotations()["kopf.zalando.org/last-handled-configuration"], `"field":"changed"`)
	})

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

// Handlers find the operator's client in their context.
func TestClientInHandlers(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	reg, kind := kex()
	handlers.OnCreate(kind, "create_fn", func(ctx context.Context, obj *unstructured.Unstructured, c *cause.Change) (any, error) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: obj.GetName() + "-child", Namespace: obj.GetNamespace()}}
		if err := hierarchies.Adopt(cm, obj); err != nil {
			return nil, err
		}
		return nil, handlers.Client(ctx).Create(ctx, cm)
	})
	env.StartOperator(t, ns, reg, handlers.Options{})
	create(t, exampleObject(t, ns))
	eventually(t, "the child exists, owned", func() bool {
		var cm corev1.ConfigMap
		err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "kopf-example-1-child"}, &cm)
		return err == nil && len(cm.OwnerReferences) == 1 && cm.OwnerReferences[0].Kind == "KopfExample"
	})
	if handlers.Client(context.Background()) != nil {
		t.Error("a client outside handlers")
	}
}
