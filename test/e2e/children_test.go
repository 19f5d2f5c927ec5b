package e2e

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestChildrenExample runs examples/20-children as a process: the
// object's ConfigMap is made, put back when deleted or edited by hand
// (the times it took are logged; docs/benchmarks.md has them measured),
// follows spec.field, and is made again on a restart if it was deleted
// while the operator was down; the object's create and update handlers
// run only for the object's own changes.
func TestChildrenExample(t *testing.T) {
	ns := env.Namespace(t)
	ctx := context.Background()
	op := startExample(t, "20-children", ns)
	obj := exampleObject(t, ns)
	if err := env.Client.Create(ctx, obj); err != nil {
		t.Fatal(err)
	}
	key := types.NamespacedName{Namespace: ns, Name: obj.GetName() + "-child"}
	child := func() *corev1.ConfigMap {
		t.Helper()
		cm := &corev1.ConfigMap{}
		if err := env.Client.Get(ctx, key, cm); apierrors.IsNotFound(err) {
			return nil
		} else if err != nil {
			t.Fatal(err)
		}
		return cm
	}
	withField := func(want string) func() bool {
		return func() bool { cm := child(); return cm != nil && cm.Data["field"] == want }
	}
	op.waitFor(t, "the child is made", withField("value"))

	first := child()
	start := time.Now()
	if err := env.Client.Delete(ctx, first); err != nil {
		t.Fatal(err)
	}
	op.waitFor(t, "the deleted child is put back", func() bool { cm := child(); return cm != nil && cm.UID != first.UID })
	t.Logf("a deleted child was put back in %s", time.Since(start))

	patch := client.RawPatch(types.MergePatchType, []byte(`{"data":{"field":"by hand"}}`))
	start = time.Now()
	if err := env.Client.Patch(ctx, child(), patch); err != nil {
		t.Fatal(err)
	}
	op.waitFor(t, "the edited child is put back", withField("value"))
	t.Logf("an edited child was put back in %s", time.Since(start))

	if err := env.Client.Patch(ctx, obj, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"field":"changed"}}`))); err != nil {
		t.Fatal(err)
	}
	op.waitFor(t, "the child follows spec.field", withField("changed"))
	op.waitForLine(t, "Handler 'update_fn/spec.field' succeeded.")
	op.stop(t)
	if n := op.count("Handler 'create_fn' succeeded."); n != 1 {
		t.Errorf("create_fn succeeded %d times, want 1", n)
	}
	if n := op.count("Handler 'update_fn/spec.field' succeeded."); n != 1 {
		t.Errorf("update_fn succeeded %d times, want 1: the child's changes must not run it", n)
	}
	if n := op.count("Child handler 'restore_fn' succeeded."); n < 2 {
		t.Errorf("restore_fn succeeded %d times, want at least 2 (the deletion and the edit)", n)
	}

	// Deleted while the operator is down: made again on the restart.
	if err := env.Client.Delete(ctx, child()); err != nil {
		t.Fatal(err)
	}
	op = startExample(t, "20-children", ns)
	op.waitFor(t, "the child deleted meanwhile is made again", withField("changed"))
	op.stop(t)
}
