package write

import (
	"context"
	"slices"
	"testing"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/internal/write/writetest"
	"github.com/kopf-go/kopf/pkg/patch"
)

// A status patch with the engine's conditions that meets a conflict goes
// again with them rebased onto the live list, so that a condition another
// writer added meanwhile stays; a writer that does not keep conditions
// sends its patch as it was (a merge patch replaces the list whole).
func TestConditionsRebasedAfterAConflict(t *testing.T) {
	for _, keep := range []bool{true, false} {
		rig := newGuardRig(t, true)
		rig.w.WithConditions(keep)
		obj := rig.Read(t)
		theirs := client.RawPatch(types.MergePatchType, []byte(`{"status":{"conditions":[{"type":"Available","status":"True"}]}}`))
		if err := rig.Raw.Status().Patch(context.Background(), writetest.Object("a", nil), theirs); err != nil {
			t.Fatal(err)
		}
		p := patch.New()
		p.SetStatus("conditions", []any{map[string]any{"type": "Ready", "status": "True"}})
		if _, err := rig.w.Commit(context.Background(), logr.Discard(), obj, p, KeepFinalizer); err != nil {
			t.Fatalf("keep %v: commit() = %v", keep, err)
		}
		if !slices.Contains(rig.Requests, "patch status 409") {
			t.Errorf("keep %v: requests %v, want a conflict of the status patch", keep, rig.Requests)
		}
		stored := &unstructured.Unstructured{}
		stored.SetGroupVersionKind(writetest.GVK)
		if err := rig.Raw.Get(context.Background(), client.ObjectKeyFromObject(obj), stored); err != nil {
			t.Fatal(err)
		}
		got, _, _ := unstructured.NestedSlice(stored.Object, "status", "conditions")
		want := []any{map[string]any{"type": "Ready", "status": "True"}}
		if keep {
			want = []any{map[string]any{"type": "Available", "status": "True"}, map[string]any{"type": "Ready", "status": "True"}}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("keep %v: the stored conditions -want +got:\n%s\nrequests: %v", keep, diff, rig.Requests)
		}
	}
}
