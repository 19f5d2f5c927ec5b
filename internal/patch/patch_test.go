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
	if diff := cmp.Diff(want, p.Body()); diff != "" {
		t.Errorf("Body() -want +got:\n%s", diff)
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

func TestSplit(t *testing.T) {
	tests := []struct {
		name               string
		build              func(p *Patch)
		wantMain, wantStat map[string]any
	}{
		{"empty", func(p *Patch) {}, nil, nil},
		{"main only", func(p *Patch) { p.SetLabel("a", "b") },
			map[string]any{"metadata": map[string]any{"labels": map[string]any{"a": "b"}}}, nil},
		{"status only", func(p *Patch) { p.SetStatus("k", "v") },
			nil, map[string]any{"status": map[string]any{"k": "v"}}},
		{"both", func(p *Patch) { p.SetStatus("k", "v"); p.Set(1, "spec", "x") },
			map[string]any{"spec": map[string]any{"x": 1}}, map[string]any{"status": map[string]any{"k": "v"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := New()
			tt.build(p)
			main, status := p.Split()
			if diff := cmp.Diff(tt.wantMain, main); diff != "" {
				t.Errorf("main -want +got:\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantStat, status); diff != "" {
				t.Errorf("status -want +got:\n%s", diff)
			}
		})
	}
}

func TestForgetGetAndClear(t *testing.T) {
	p := New()
	p.SetAnnotation("k", "v")
	if v, ok := p.Get("metadata", "annotations", "k"); !ok || v != "v" {
		t.Errorf("Get() = %v, %v", v, ok)
	}
	p.Forget("metadata", "annotations", "k")
	if _, ok := p.Get("metadata", "annotations", "k"); ok {
		t.Error("Forget() left the key")
	}
	p.Set(1, "spec", "x")
	p.Clear()
	if !p.IsEmpty() || p.Body() != nil {
		t.Errorf("Clear() left %v", p.Body())
	}
	var zero Patch
	zero.Set("v", "spec", "x")
	if diff := cmp.Diff(map[string]any{"spec": map[string]any{"x": "v"}}, zero.Body()); diff != "" {
		t.Errorf("a zero Patch is usable; -want +got:\n%s", diff)
	}
}
