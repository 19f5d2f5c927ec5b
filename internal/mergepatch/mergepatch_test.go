package mergepatch

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kopf-go/kopf/pkg/patch"
)

func TestSplit(t *testing.T) {
	tests := []struct {
		name               string
		build              func(p *patch.Patch)
		wantMain, wantStat map[string]any
	}{
		{"empty", func(p *patch.Patch) {}, nil, nil},
		{"main only", func(p *patch.Patch) { p.SetLabel("a", "b") },
			map[string]any{"metadata": map[string]any{"labels": map[string]any{"a": "b"}}}, nil},
		{"status only", func(p *patch.Patch) { p.SetStatus("k", "v") },
			nil, map[string]any{"status": map[string]any{"k": "v"}}},
		{"both", func(p *patch.Patch) { p.SetStatus("k", "v"); p.Set(1, "spec", "x") },
			map[string]any{"spec": map[string]any{"x": 1}}, map[string]any{"status": map[string]any{"k": "v"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := patch.New()
			tt.build(p)
			main, status := Split(p)
			if diff := cmp.Diff(tt.wantMain, main); diff != "" {
				t.Errorf("main -want +got:\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantStat, status); diff != "" {
				t.Errorf("status -want +got:\n%s", diff)
			}
		})
	}
}

func TestWholeAndResults(t *testing.T) {
	p := patch.New()
	if Whole(p) != nil {
		t.Errorf("Whole() of an empty patch = %v, want nil", Whole(p))
	}
	if err := SetResult(p, "h", map[string]any{"a": 1}); err != nil {
		t.Fatal(err)
	}
	if err := SetResult(p, "h", map[string]any{"b": 2}); err != nil {
		t.Fatal(err)
	}
	if err := SetResult(p, "s", "done"); err != nil {
		t.Fatal(err)
	}
	if err := SetResult(p, "bad", func() {}); err == nil {
		t.Error("SetResult() took a result that does not encode")
	}
	want := map[string]any{"status": map[string]any{"h": map[string]any{"a": float64(1), "b": float64(2)}, "s": "done"}}
	if diff := cmp.Diff(want, Whole(p)); diff != "" {
		t.Errorf("Whole() -want +got:\n%s", diff)
	}
}
