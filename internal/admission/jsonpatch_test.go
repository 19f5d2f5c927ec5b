package admission

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kopf-go/kopf/pkg/patch"
)

type m = map[string]any

func patchOf(set func(p *patch.Patch)) *patch.Patch {
	p := patch.New()
	set(p)
	return p
}

func TestJSONPatch(t *testing.T) {
	body := m{
		"metadata": m{"name": "n", "labels": m{"kopf.dev/x": "1"}},
		"spec":     m{"field": "value", "list": []any{int64(1), int64(2)}, "num": int64(1)},
	}
	tests := []struct {
		name    string
		body    m
		patches []*patch.Patch
		want    []Op
	}{
		{"no patches", body, nil, nil},
		{"empty patch", body, []*patch.Patch{patch.New()}, nil},
		{"nil patch", body, []*patch.Patch{nil}, nil},
		{"add and replace (Kopf's example)", body, []*patch.Patch{patchOf(func(p *patch.Patch) {
			p.Set("added", "xyz")
			p.Set("replaced", "spec", "field")
		})}, []Op{
			{Op: "replace", Path: "/spec/field", Value: "replaced"},
			{Op: "add", Path: "/xyz", Value: "added"},
		}},
		{"a new nested map", body, []*patch.Patch{patchOf(func(p *patch.Patch) { p.Set(123, "status", "injected") })},
			[]Op{{Op: "add", Path: "/status", Value: m{"injected": 123}}}},
		{"a new key in an existing map", body, []*patch.Patch{patchOf(func(p *patch.Patch) { p.Set(123, "spec", "injected") })},
			[]Op{{Op: "add", Path: "/spec/injected", Value: 123}}},
		{"remove", body, []*patch.Patch{patchOf(func(p *patch.Patch) { p.Remove("spec", "field") })},
			[]Op{{Op: "remove", Path: "/spec/field"}}},
		{"removing what is absent is no change", body, []*patch.Patch{patchOf(func(p *patch.Patch) { p.Remove("spec", "nothing") })}, nil},
		{"removing under what is absent is no change", body, []*patch.Patch{patchOf(func(p *patch.Patch) { p.Remove("nothing", "deeper") })}, nil},
		{"an empty map is no change", body, []*patch.Patch{patchOf(func(p *patch.Patch) { p.Set(m{}, "nothing") })}, nil},
		{"setting the same value is no change", body, []*patch.Patch{patchOf(func(p *patch.Patch) {
			p.Set("value", "spec", "field")
			p.Set(1.0, "spec", "num") // by JSON meaning
		})}, nil},
		{"lists are replaced whole", body, []*patch.Patch{patchOf(func(p *patch.Patch) { p.Set([]any{1, 2, 3}, "spec", "list") })},
			[]Op{{Op: "replace", Path: "/spec/list", Value: []any{1.0, 2.0, 3.0}}}},
		{"typed values are encoded as JSON", body, []*patch.Patch{patchOf(func(p *patch.Patch) {
			p.Set(map[string]string{"b": "2"}, "spec", "typed")
		})}, []Op{{Op: "add", Path: "/spec/typed", Value: m{"b": "2"}}}},
		{"label keys are escaped", body, []*patch.Patch{patchOf(func(p *patch.Patch) {
			p.SetLabel("kopf.dev/x", "2")
			p.SetLabel("a~b", "3")
		})}, []Op{
			{Op: "add", Path: "/metadata/labels/a~0b", Value: "3"},
			{Op: "replace", Path: "/metadata/labels/kopf.dev~1x", Value: "2"},
		}},
		{"a scalar replaced by a map", body, []*patch.Patch{patchOf(func(p *patch.Patch) { p.Set(m{"a": 1, "gone": nil}, "spec", "field") })},
			[]Op{{Op: "replace", Path: "/spec/field", Value: m{"a": 1.0}}}},
		{"patches apply in order", body, []*patch.Patch{
			patchOf(func(p *patch.Patch) { p.Set("first", "spec", "field"); p.Set("kept", "spec", "other") }),
			patchOf(func(p *patch.Patch) { p.Set("second", "spec", "field") }),
		}, []Op{
			{Op: "replace", Path: "/spec/field", Value: "second"},
			{Op: "add", Path: "/spec/other", Value: "kept"},
		}},
		{"a later removal wins", body, []*patch.Patch{
			patchOf(func(p *patch.Patch) { p.Set(m{"x": 1}, "spec") }),
			patchOf(func(p *patch.Patch) { p.Remove("spec") }),
		}, []Op{{Op: "remove", Path: "/spec"}}},
		{"a removal then a new map replaces what was there", m{"a": m{"old": 1}}, []*patch.Patch{
			patchOf(func(p *patch.Patch) { p.Remove("a") }),
			patchOf(func(p *patch.Patch) { p.Set(1, "a", "new") }),
		}, []Op{
			{Op: "add", Path: "/a/new", Value: 1.0},
			{Op: "remove", Path: "/a/old"},
		}},
		{"no body", nil, []*patch.Patch{patchOf(func(p *patch.Patch) { p.Set(1, "a") })},
			[]Op{{Op: "add", Path: "/a", Value: 1.0}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := deepJSON(t, tt.body)
			got, err := JSONPatch(tt.body, tt.patches...)
			if err != nil {
				t.Fatal(err)
			}
			// Compare by JSON meaning: the values' Go types are an
			// implementation detail.
			if diff := cmp.Diff(deepJSON(t, tt.want), deepJSON(t, got)); diff != "" {
				t.Errorf("JSONPatch() -want +got:\n%s", diff)
			}
			if diff := cmp.Diff(before, deepJSON(t, tt.body)); diff != "" {
				t.Errorf("the body was changed -before +after:\n%s", diff)
			}
		})
	}
}

func TestJSONPatchRefusesWhatIsNotJSON(t *testing.T) {
	p := patch.New()
	p.Set(func() {}, "spec", "fn")
	if _, err := JSONPatch(m{}, p); err == nil {
		t.Error("JSONPatch() accepted a function as a value")
	}
}

func TestOpJSON(t *testing.T) {
	ops := []Op{{Op: "add", Path: "/a", Value: nil}, {Op: "remove", Path: "/b"}, {Op: "replace", Path: "/c", Value: 1}}
	got, err := json.Marshal(ops)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"op":"add","path":"/a","value":null},{"op":"remove","path":"/b"},{"op":"replace","path":"/c","value":1}]`
	if string(got) != want {
		t.Errorf("json.Marshal() = %s, want %s", got, want)
	}
}

func deepJSON(t *testing.T, v any) any {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out
}
