package integration

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/handlers"

	"github.com/kopf-go/kopf/pkg/cause"
)

func mergePatch(t *testing.T, namespace, name, patch string, status bool) {
	t.Helper()
	obj := kexRef(namespace, name)
	p := client.RawPatch(types.MergePatchType, []byte(patch))
	var err error
	if status {
		err = env.Client.Status().Patch(context.Background(), obj, p)
	} else {
		err = env.Client.Patch(context.Background(), obj, p)
	}
	if err != nil {
		t.Fatalf("patch %s with %s: %v", name, patch, err)
	}
}

// Kopf's acceptance item 4: an update handler sees the diff and the old and
// new essences, a field handler sees the field's old and new values, the
// diffbase follows, and changes of status or system fields call nothing.
func TestUpdateDiffAndNoOp(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	reg, kind := kex()
	var seen calls
	handlers.OnCreate(kind, "create_fn", seen.record)
	handlers.OnUpdate(kind, "update_fn", seen.record)
	handlers.OnField(kind, "field_fn", "spec.field", seen.record)
	op := env.StartOperator(t, ns, reg, handlers.Options{})

	create(t, exampleObject(t, ns))
	eventually(t, "creation is handled", func() bool { return op.Logs.Count("Creation is processed: 2 succeeded; 0 failed.") == 1 })
	if f := seen.of("field_fn/spec.field"); len(f) != 1 || f[0].Reason != cause.Create || f[0].Old != nil || f[0].New != "value" {
		t.Errorf("on creation, field_fn calls = %+v; want one with reason create, old nil, new value (as Kopf)", f)
	}

	mergePatch(t, ns, "kopf-example-1", `{"spec":{"field":"changed"}}`, false)
	eventually(t, "the update is handled", func() bool { return op.Logs.Count("Updating is processed: 2 succeeded; 0 failed.") == 1 })
	updates := seen.of("update_fn")
	if len(updates) != 1 {
		t.Fatalf("update_fn called %d times, want 1", len(updates))
	}
	if want := `(('change', ('spec', 'field'), 'value', 'changed'),)`; updates[0].Diff != want {
		t.Errorf("update diff = %s, want %s", updates[0].Diff, want)
	}
	oldSpec := updates[0].Old.(map[string]any)["spec"].(map[string]any)
	newSpec := updates[0].New.(map[string]any)["spec"].(map[string]any)
	if oldSpec["field"] != "value" || newSpec["field"] != "changed" {
		t.Errorf("update old/new spec.field = %v/%v, want value/changed", oldSpec["field"], newSpec["field"])
	}
	fieldCalls := seen.of("field_fn/spec.field")
	if last := fieldCalls[len(fieldCalls)-1]; last.Old != "value" || last.New != "changed" || last.Diff != `(('change', (), 'value', 'changed'),)` {
		t.Errorf("field_fn got old=%v new=%v diff=%s, want value, changed and a root-level change", last.Old, last.New, last.Diff)
	}
	eventually(t, "the diffbase follows", func() bool {
		return get(t, ns, "kopf-example-1").GetAnnotations()["kopf.zalando.org/last-handled-configuration"] ==
			`{"spec":{"duration":"1m","field":"changed","items":["item1","item2"]},"metadata":{"labels":{"somelabel":"somevalue"},"annotations":{"someannotation":"somevalue"}}}`+"\n"
	})

	// Status-only and system-field changes: nothing runs. A later real
	// change proves the engine has seen them (it processes in order).
	noops := op.Logs.Count("Something has changed, but we are not interested (the essence is the same).")
	mergePatch(t, ns, "kopf-example-1", `{"status":{"x":1}}`, true)
	mergePatch(t, ns, "kopf-example-1", `{"metadata":{"finalizers":["example.com/f"]}}`, false)
	mergePatch(t, ns, "kopf-example-1", `{"metadata":{"finalizers":null,"ownerReferences":null}}`, false)
	eventually(t, "the no-op changes are seen", func() bool {
		return op.Logs.Count("Something has changed, but we are not interested (the essence is the same).") > noops
	})
	mergePatch(t, ns, "kopf-example-1", `{"metadata":{"labels":{"new":"label"}}}`, false)
	eventually(t, "the label change is handled", func() bool { return len(seen.of("update_fn")) == 2 })
	if d := seen.of("update_fn")[1].Diff; d != `(('add', ('metadata', 'labels', 'new'), None, 'label'),)` {
		t.Errorf("label diff = %s", d)
	}
	if got := len(seen.of("field_fn/spec.field")); got != 2 {
		t.Errorf("field_fn called %d times in all, want 2 (create and the field change)", got)
	}
}

// Kopf's acceptance item 5: one handler per cycle; after the first, both
// records are on the object (the done one and the pending one); at the end
// they are purged and the diffbase written.
func TestOneHandlerPerCycleWithProgress(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	seenVersions := recordVersions(t, ns)
	reg, kind := kex()
	var seen calls
	record := func(ctx context.Context, obj *unstructured.Unstructured, c *cause.Change) (any, error) {
		seen.add(c)
		return map[string]any{"by": c.HandlerID}, nil
	}
	handlers.OnCreate(kind, "create_a", record)
	handlers.OnCreate(kind, "create_b", record)
	op := env.StartOperator(t, ns, reg, handlers.Options{})

	create(t, exampleObject(t, ns))
	eventually(t, "creation is handled", func() bool { return op.Logs.Count("Creation is processed: 2 succeeded; 0 failed.") == 1 })
	if ids := []string{seen.all()[0].ID, seen.all()[1].ID}; !cmp.Equal(ids, []string{"create_a", "create_b"}) {
		t.Errorf("order = %v, want create_a then create_b", ids)
	}
	var intermediate *unstructured.Unstructured
	for _, v := range seenVersions.all() {
		if _, ok := v.GetAnnotations()["kopf.zalando.org/create_b"]; ok {
			intermediate = v
			break
		}
	}
	if intermediate == nil {
		t.Fatal("no version carried create_b's pending record")
	}
	a := decodeRecord(t, intermediate.GetAnnotations()["kopf.zalando.org/create_a"])
	b := decodeRecord(t, intermediate.GetAnnotations()["kopf.zalando.org/create_b"])
	if a["success"] != true || a["failure"] != false || a["retries"] != float64(1) || a["purpose"] != "create" || a["started"] == nil || a["stopped"] == nil {
		t.Errorf("create_a record after the first cycle = %v", a)
	}
	if b["success"] != false || b["retries"] != float64(0) || b["purpose"] != "create" || b["stopped"] != nil {
		t.Errorf("create_b record after the first cycle = %v", b)
	}
	eventually(t, "records are purged and the diffbase stored", func() bool {
		ann := get(t, ns, "kopf-example-1").GetAnnotations()
		_, hasA := ann["kopf.zalando.org/create_a"]
		_, hasB := ann["kopf.zalando.org/create_b"]
		return !hasA && !hasB && ann["kopf.zalando.org/last-handled-configuration"] != ""
	})
	status := get(t, ns, "kopf-example-1").Object["status"]
	if diff := cmp.Diff(map[string]any{"create_a": map[string]any{"by": "create_a"}, "create_b": map[string]any{"by": "create_b"}}, status); diff != "" {
		t.Errorf("status -want +got:\n%s", diff)
	}
}

// A deletion supersedes an unfinished update: the update's records are
// purged (with Kopf's log line) and the delete handler runs.
func TestDeletionSupersedesUpdate(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	reg, kind := kex()
	var seen calls
	handlers.OnCreate(kind, "create_fn", nothing)
	handlers.OnUpdate(kind, "update_fn", func(ctx context.Context, obj *unstructured.Unstructured, c *cause.Change) (any, error) {
		seen.add(c)
		return nil, handlers.Temporary(errors.New("later"), time.Hour)
	})
	handlers.OnDelete(kind, "delete_fn", seen.record)
	op := env.StartOperator(t, ns, reg, handlers.Options{})
	create(t, exampleObject(t, ns))
	eventually(t, "creation is handled", func() bool { return op.Logs.Count("Creation is processed: 1 succeeded; 0 failed.") == 1 })
	mergePatch(t, ns, "kopf-example-1", `{"spec":{"field":"changed"}}`, false)
	eventually(t, "the update sleeps", func() bool {
		_, ok := get(t, ns, "kopf-example-1").GetAnnotations()["kopf.zalando.org/update_fn"]
		return ok && len(op.Logs.Messages("seconds for the delayed handlers.")) > 0
	})
	if err := env.Client.Delete(context.Background(), exampleObject(t, ns)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the object is gone", func() bool { return gone(t, ns, "kopf-example-1") })
	if n := op.Logs.Count("Updating is superseded by deletion: 0 succeeded; 0 failed; 1 left to the moment."); n != 1 {
		t.Errorf("the superseded update was logged %d times, want 1", n)
	}
	if n := len(seen.of("update_fn")); n != 1 {
		t.Errorf("update_fn ran %d times, want 1", n)
	}
	if n := len(seen.of("delete_fn")); n != 1 {
		t.Errorf("delete_fn ran %d times, want 1", n)
	}
}
