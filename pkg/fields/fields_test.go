package fields

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	tests := []struct {
		in   string
		want Path
	}{
		{"", nil},
		{"spec", Path{"spec"}},
		{"spec.field", Path{"spec", "field"}},
		{"status.kopf.progress", Path{"status", "kopf", "progress"}},
		// Kopf splits on every dot too: an empty part stays an empty key.
		{"spec..x", Path{"spec", "", "x"}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got := Parse(tt.in)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Parse(%q) -want +got:\n%s", tt.in, diff)
			}
			if s := got.String(); s != tt.in {
				t.Errorf("Parse(%q).String() = %q, want the input back", tt.in, s)
			}
		})
	}
}

func TestHasPrefix(t *testing.T) {
	tests := []struct {
		p, prefix Path
		want      bool
	}{
		{Path{"spec", "field"}, nil, true},
		{Path{"spec", "field"}, Path{"spec"}, true},
		{Path{"spec", "field"}, Path{"spec", "field"}, true},
		{Path{"spec", "field"}, Path{"spec", "field", "x"}, false},
		{Path{"spec", "field"}, Path{"spec", "fie"}, false},
		{Path{"spec", "field"}, Path{"status"}, false},
		{nil, nil, true},
	}
	for _, tt := range tests {
		if got := tt.p.HasPrefix(tt.prefix); got != tt.want {
			t.Errorf("%q.HasPrefix(%q) = %v, want %v", tt.p, tt.prefix, got, tt.want)
		}
	}
}

func TestResolve(t *testing.T) {
	body := map[string]any{
		"spec": map[string]any{
			"field": "value",
			"null":  nil,
			"list":  []any{"a", "b"},
			"str":   "not-a-map",
		},
	}
	tests := []struct {
		name      string
		body      any
		path      Path
		want      any
		wantFound bool
	}{
		{"root", body, nil, body, true},
		{"scalar", body, Path{"spec", "field"}, "value", true},
		{"map", body, Path{"spec"}, body["spec"], true},
		{"present null", body, Path{"spec", "null"}, nil, true},
		{"absent key", body, Path{"spec", "missing"}, nil, false},
		{"absent parent", body, Path{"status", "x"}, nil, false},
		{"through a list", body, Path{"spec", "list", "0"}, nil, false},
		{"through a string", body, Path{"spec", "str", "x"}, nil, false},
		{"nil body", nil, Path{"spec"}, nil, false},
		{"nil body at the root", nil, nil, nil, true},
		{"scalar body", "text", Path{"x"}, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, found := Resolve(tt.body, tt.path)
			if found != tt.wantFound {
				t.Errorf("Resolve() found = %v, want %v", found, tt.wantFound)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Resolve() -want +got:\n%s", diff)
			}
		})
	}
}

func TestSet(t *testing.T) {
	tests := []struct {
		name  string
		body  map[string]any
		path  Path
		value any
		want  map[string]any
	}{
		{"top level", map[string]any{}, Path{"a"}, 1, map[string]any{"a": 1}},
		{"creates parents", map[string]any{}, Path{"a", "b", "c"}, "x",
			map[string]any{"a": map[string]any{"b": map[string]any{"c": "x"}}}},
		{"keeps siblings", map[string]any{"a": map[string]any{"k": "v"}}, Path{"a", "b"}, "x",
			map[string]any{"a": map[string]any{"k": "v", "b": "x"}}},
		{"replaces a scalar in the way", map[string]any{"a": "scalar"}, Path{"a", "b"}, "x",
			map[string]any{"a": map[string]any{"b": "x"}}},
		{"replaces a list in the way", map[string]any{"a": []any{1}}, Path{"a", "b"}, "x",
			map[string]any{"a": map[string]any{"b": "x"}}},
		{"overwrites the value", map[string]any{"a": map[string]any{"b": "old"}}, Path{"a", "b"}, "new",
			map[string]any{"a": map[string]any{"b": "new"}}},
		{"stores null", map[string]any{}, Path{"a"}, nil, map[string]any{"a": nil}},
		{"empty path is a no-op", map[string]any{"a": 1}, nil, "x", map[string]any{"a": 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			Set(tt.body, tt.path, tt.value)
			if diff := cmp.Diff(tt.want, tt.body); diff != "" {
				t.Errorf("Set() -want +got:\n%s", diff)
			}
		})
	}
}

func TestRemove(t *testing.T) {
	tests := []struct {
		name string
		body map[string]any
		path Path
		want map[string]any
		ok   bool
	}{
		{"leaf", map[string]any{"a": map[string]any{"b": 1, "c": 2}}, Path{"a", "b"},
			map[string]any{"a": map[string]any{"c": 2}}, true},
		{"leaves an empty parent", map[string]any{"a": map[string]any{"b": 1}}, Path{"a", "b"},
			map[string]any{"a": map[string]any{}}, true},
		{"present null", map[string]any{"a": nil}, Path{"a"}, map[string]any{}, true},
		{"absent key", map[string]any{"a": map[string]any{}}, Path{"a", "b"},
			map[string]any{"a": map[string]any{}}, false},
		{"absent parent", map[string]any{}, Path{"a", "b"}, map[string]any{}, false},
		{"parent not a map", map[string]any{"a": "s"}, Path{"a", "b"}, map[string]any{"a": "s"}, false},
		{"empty path", map[string]any{"a": 1}, nil, map[string]any{"a": 1}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if ok := Remove(tt.body, tt.path); ok != tt.ok {
				t.Errorf("Remove() = %v, want %v", ok, tt.ok)
			}
			if diff := cmp.Diff(tt.want, tt.body); diff != "" {
				t.Errorf("Remove() -want +got:\n%s", diff)
			}
		})
	}
}

func TestDeepCopyIsIndependent(t *testing.T) {
	orig := map[string]any{
		"spec": map[string]any{
			"items":  []any{"a", map[string]any{"k": "v"}},
			"nested": map[string]any{"x": 1.0},
		},
	}
	want := map[string]any{
		"spec": map[string]any{
			"items":  []any{"a", map[string]any{"k": "v"}},
			"nested": map[string]any{"x": 1.0},
		},
	}
	cp := DeepCopy(orig).(map[string]any)
	if diff := cmp.Diff(want, cp); diff != "" {
		t.Fatalf("DeepCopy() -want +got:\n%s", diff)
	}

	// Mutating the copy at every level must leave the original alone.
	spec := cp["spec"].(map[string]any)
	spec["added"] = true
	spec["nested"].(map[string]any)["x"] = 2.0
	items := spec["items"].([]any)
	items[0] = "changed"
	items[1].(map[string]any)["k"] = "changed"
	if diff := cmp.Diff(want, orig); diff != "" {
		t.Errorf("the original changed with its copy -want +got:\n%s", diff)
	}

	// And the other way round.
	cp2 := DeepCopy(orig).(map[string]any)
	orig["spec"].(map[string]any)["items"].([]any)[0] = "mutated"
	if got := cp2["spec"].(map[string]any)["items"].([]any)[0]; got != "a" {
		t.Errorf("the copy changed with its original: items[0] = %v", got)
	}
}

func TestDeepCopyScalars(t *testing.T) {
	for _, v := range []any{nil, "s", 1.5, int64(3), true} {
		if got := DeepCopy(v); got != v {
			t.Errorf("DeepCopy(%#v) = %#v", v, got)
		}
	}
}

func TestEqual(t *testing.T) {
	tests := []struct {
		name string
		a, b any
		want bool
	}{
		{"int64 and float64", int64(1), float64(1), true},
		{"int and float64", 3, 3.0, true},
		{"int32 and int64", int32(7), int64(7), true},
		{"float32 and float64", float32(0.5), 0.5, true},
		{"json.Number and int64", json.Number("42"), int64(42), true},
		{"json.Number and float64", json.Number("1.5"), 1.5, true},
		{"different numbers", int64(1), float64(1.5), false},
		{"bad json.Number", json.Number("x"), 0.0, false},
		{"number and string", int64(1), "1", false},
		{"string and number", "1", int64(1), false},
		{"bool and number", true, 1, false},
		{"strings", "a", "a", true},
		{"different strings", "a", "b", false},
		{"bools", true, true, true},
		{"nils", nil, nil, true},
		{"nil and empty map", nil, map[string]any{}, false},
		{"empty map and nil", map[string]any{}, nil, false},
		{"nil and zero", nil, 0, false},
		{"zero and nil", 0, nil, false},
		{"string and nil", "", nil, false},
		{"maps with mixed numbers", map[string]any{"a": int64(1), "b": []any{2.0}}, map[string]any{"a": 1.0, "b": []any{int64(2)}}, true},
		{"maps with different keys", map[string]any{"a": 1}, map[string]any{"b": 1}, false},
		{"maps of different sizes", map[string]any{"a": 1}, map[string]any{"a": 1, "b": 2}, false},
		{"null value and absent key", map[string]any{"a": nil}, map[string]any{}, false},
		{"lists", []any{"a", 1.0}, []any{"a", int64(1)}, true},
		{"lists in another order", []any{"a", "b"}, []any{"b", "a"}, false},
		{"lists of different lengths", []any{"a"}, []any{"a", "a"}, false},
		{"list and map", []any{}, map[string]any{}, false},
		{"map and list", map[string]any{}, []any{}, false},
		{"string and list", "a", []any{"a"}, false},
		{"number and map", 1.0, map[string]any{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Equal(tt.a, tt.b); got != tt.want {
				t.Errorf("Equal(%#v, %#v) = %v, want %v", tt.a, tt.b, got, tt.want)
			}
			if got := Equal(tt.b, tt.a); got != tt.want {
				t.Errorf("Equal(%#v, %#v) = %v, want %v (symmetry)", tt.b, tt.a, got, tt.want)
			}
		})
	}
}

type normalizeSpec struct {
	Name    string            `json:"name"`
	Count   int32             `json:"count"`
	Labels  map[string]string `json:"labels,omitempty"`
	Items   []string          `json:"items"`
	Skipped string            `json:"-"`
}

func TestNormalize(t *testing.T) {
	plain := map[string]any{"a": []any{"x", 1.0, int64(2), true, nil}}
	tests := []struct {
		name string
		in   any
		want any
	}{
		{"struct", normalizeSpec{Name: "n", Count: 3, Items: []string{"a"}, Skipped: "s"},
			map[string]any{"name": "n", "count": 3.0, "items": []any{"a"}}},
		{"struct pointer", &normalizeSpec{Name: "n", Labels: map[string]string{"k": "v"}},
			map[string]any{"name": "n", "count": 0.0, "labels": map[string]any{"k": "v"}, "items": nil}},
		{"typed map", map[string]string{"k": "v"}, map[string]any{"k": "v"}},
		{"typed map of ints", map[string]int{"k": 1}, map[string]any{"k": 1.0}},
		{"nested typed values", map[string]any{"m": map[string]int{"k": 1}, "s": []string{"x"}},
			map[string]any{"m": map[string]any{"k": 1.0}, "s": []any{"x"}}},
		{"typed slice", []string{"a", "b"}, []any{"a", "b"}},
		{"int", 5, 5.0},
		{"int32", int32(5), 5.0},
		{"plain map kept", plain, plain},
		{"string", "s", "s"},
		{"nil", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Normalize(tt.in)
			if err != nil {
				t.Fatalf("Normalize() error: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Normalize() -want +got:\n%s", diff)
			}
		})
	}
}

func TestNormalizeKeepsPlainValuesAsTheyAre(t *testing.T) {
	// An int64 from the API machinery must not turn into a float64.
	in := map[string]any{"n": int64(1) << 60}
	got, err := Normalize(in)
	if err != nil {
		t.Fatal(err)
	}
	if n := got.(map[string]any)["n"]; n != int64(1)<<60 {
		t.Errorf("Normalize() changed an int64 to %#v", n)
	}
}

func TestNormalizeErrors(t *testing.T) {
	for name, in := range map[string]any{
		"channel":  make(chan int),
		"function": func() {},
		"in a map": map[string]any{"f": func() {}},
	} {
		t.Run(name, func(t *testing.T) {
			if got, err := Normalize(in); err == nil {
				t.Errorf("Normalize() = %#v, want an error", got)
			}
		})
	}
}

func TestPruneEmpty(t *testing.T) {
	stanzas := []Path{{"metadata", "annotations"}, {"metadata", "labels"}, {"metadata"}, {"status"}}
	tests := []struct {
		name  string
		body  map[string]any
		paths []Path
		want  map[string]any
	}{
		{"children before parents",
			map[string]any{"metadata": map[string]any{"annotations": map[string]any{}, "labels": map[string]any{}}, "status": map[string]any{}, "spec": map[string]any{}},
			stanzas,
			map[string]any{"spec": map[string]any{}}},
		{"non-empty stay",
			map[string]any{"metadata": map[string]any{"annotations": map[string]any{}, "labels": map[string]any{"a": "b"}}},
			stanzas,
			map[string]any{"metadata": map[string]any{"labels": map[string]any{"a": "b"}}}},
		{"parents before children leave the parent",
			map[string]any{"metadata": map[string]any{"labels": map[string]any{}}},
			[]Path{{"metadata"}, {"metadata", "labels"}},
			map[string]any{"metadata": map[string]any{}}},
		{"empty lists and strings are not empty maps",
			map[string]any{"status": []any{}, "metadata": ""},
			stanzas,
			map[string]any{"status": []any{}, "metadata": ""}},
		{"absent paths are fine", map[string]any{}, stanzas, map[string]any{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			PruneEmpty(tt.body, tt.paths...)
			if diff := cmp.Diff(tt.want, tt.body); diff != "" {
				t.Errorf("PruneEmpty() -want +got:\n%s", diff)
			}
		})
	}
}

func TestPruneEmptyStanzas(t *testing.T) {
	tests := []struct {
		name string
		body map[string]any
		want map[string]any
	}{
		{"children before parents",
			map[string]any{"metadata": map[string]any{"annotations": map[string]any{}, "labels": map[string]any{}}, "status": map[string]any{}, "spec": map[string]any{}},
			map[string]any{"spec": map[string]any{}}},
		{"non-empty stay",
			map[string]any{"metadata": map[string]any{"annotations": map[string]any{"a": "b"}, "labels": map[string]any{}}, "status": map[string]any{"phase": "x"}},
			map[string]any{"metadata": map[string]any{"annotations": map[string]any{"a": "b"}}, "status": map[string]any{"phase": "x"}}},
		{"other empty maps stay",
			map[string]any{"spec": map[string]any{}, "metadata": map[string]any{"finalizers": map[string]any{}}},
			map[string]any{"spec": map[string]any{}, "metadata": map[string]any{"finalizers": map[string]any{}}}},
		{"absent stanzas are fine", map[string]any{}, map[string]any{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			PruneEmptyStanzas(tt.body)
			if diff := cmp.Diff(tt.want, tt.body); diff != "" {
				t.Errorf("PruneEmptyStanzas() -want +got:\n%s", diff)
			}
		})
	}
}
