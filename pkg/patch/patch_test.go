package patch

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPatchBuildsOneMergePatch(t *testing.T) {
	p := New()
	if !p.IsEmpty() {
		t.Fatal("a new patch is not empty")
	}
	p.SetLabel("l", "v")
	p.RemoveLabel("gone")
	p.SetAnnotation("a", "1")
	p.RemoveAnnotation("old")
	p.Set("x", "spec", "field")
	p.SetStatus("scalar", 5)
	p.MergeStatus("result", map[string]any{"a": 1})
	p.MergeStatus("result", map[string]any{"b": 2})
	p.Remove("spec", "removed")

	want := map[string]any{
		"metadata": map[string]any{
			"labels":      map[string]any{"l": "v", "gone": nil},
			"annotations": map[string]any{"a": "1", "old": nil},
		},
		"spec":   map[string]any{"field": "x", "removed": nil},
		"status": map[string]any{"scalar": 5, "result": map[string]any{"a": 1, "b": 2}},
	}
	if got, _ := p.Get(); !cmp.Equal(want, got) {
		t.Errorf("Get() -want +got:\n%s", cmp.Diff(want, got))
	}
	raw, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var decoded map[string]any
	if err := json.Unmarshal(raw, &decoded); err != nil {
		t.Fatal(err)
	}
	if decoded["spec"].(map[string]any)["removed"] != nil {
		t.Errorf("a removal must be a JSON null: %s", raw)
	}
}

func TestForgetAndGet(t *testing.T) {
	p := New()
	p.SetAnnotation("k", "v")
	if v, ok := p.Get("metadata", "annotations", "k"); !ok || v != "v" {
		t.Errorf("Get() = %v, %v", v, ok)
	}
	p.Forget("metadata", "annotations", "k")
	if _, ok := p.Get("metadata", "annotations", "k"); ok {
		t.Error("Forget() left the key")
	}
	if !p.IsEmpty() {
		t.Errorf("Forget() left the emptied maps: %v", p)
	}
	var zero Patch
	zero.Set("v", "spec", "x")
	if got, _ := zero.Get(); !cmp.Equal(map[string]any{"spec": map[string]any{"x": "v"}}, got) {
		diff := cmp.Diff(map[string]any{"spec": map[string]any{"x": "v"}}, got)
		t.Errorf("a zero Patch is usable; -want +got:\n%s", diff)
	}
}
