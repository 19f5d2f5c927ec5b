package diff

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kopf-go/kopf/pkg/fields"
)

type m = map[string]any

func TestCompute(t *testing.T) {
	tests := []struct {
		name string
		a, b any
		want Diff
	}{
		{"nils", nil, nil, nil},
		{"nil to value is an addition at the root", nil, "x", Diff{{Add, fields.Path{}, nil, "x"}}},
		{"value to nil is a removal at the root", "x", nil, Diff{{Remove, fields.Path{}, "x", nil}}},
		{"nil to a map adds the whole map", nil, m{"spec": m{"a": 1}}, Diff{{Add, fields.Path{}, nil, m{"spec": m{"a": 1}}}}},
		{"equal scalars", 100, 100, nil},
		{"unequal scalars", 100, 200, Diff{{Change, fields.Path{}, 100, 200}}},
		{"numbers of different Go types are equal", int64(5), 5.0, nil},
		{"equal strings", "hello", "hello", nil},
		{"unequal strings", "hello", "world", Diff{{Change, fields.Path{}, "hello", "world"}}},
		{"equal lists", []any{100, 200, 300}, []any{100, 200, 300}, nil},
		{"lists are compared whole", []any{100, 200, 300}, []any{100, 666, 300},
			Diff{{Change, fields.Path{}, []any{100, 200, 300}, []any{100, 666, 300}}}},
		{"map and scalar", m{"a": 1}, "x", Diff{{Change, fields.Path{}, m{"a": 1}, "x"}}},
		{"equal maps", m{"hello": "world", "key": "val"}, m{"key": "val", "hello": "world"}, nil},
		{"key added", m{"hello": "world"}, m{"hello": "world", "key": "val"},
			Diff{{Add, fields.Path{"key"}, nil, "val"}}},
		{"key removed", m{"hello": "world", "key": "val"}, m{"hello": "world"},
			Diff{{Remove, fields.Path{"key"}, "val", nil}}},
		{"key changed", m{"hello": "world", "key": "old"}, m{"hello": "world", "key": "new"},
			Diff{{Change, fields.Path{"key"}, "old", "new"}}},
		{"nested key changed", m{"main": m{"hello": "world", "key": "old"}}, m{"main": m{"hello": "world", "key": "new"}},
			Diff{{Change, fields.Path{"main", "key"}, "old", "new"}}},
		{"label added", m{"metadata": m{}}, m{"metadata": m{"labels": "LABEL"}},
			Diff{{Add, fields.Path{"metadata", "labels"}, nil, "LABEL"}}},
		{"list inside a map", m{"spec": m{"items": []any{"task1", "task2"}}}, m{"spec": m{"items": []any{"task3", "task4"}}},
			Diff{{Change, fields.Path{"spec", "items"}, []any{"task1", "task2"}, []any{"task3", "task4"}}}},
		{"a whole stanza added", m{"spec": m{"a": 1}}, m{"spec": m{"a": 1}, "metadata": m{"labels": m{"x": "y"}}},
			Diff{{Add, fields.Path{"metadata"}, nil, m{"labels": m{"x": "y"}}}}},
		// A null value and an absent key are the same to the diff, as in Kopf.
		{"null value to absent", m{"a": nil}, m{}, nil},
		{"absent to null value", m{}, m{"a": nil}, nil},
		{"null value to a value", m{"a": nil}, m{"a": "x"}, Diff{{Add, fields.Path{"a"}, nil, "x"}}},
		{"value to a null value", m{"a": "x"}, m{"a": nil}, Diff{{Remove, fields.Path{"a"}, "x", nil}}},
		{"empty map to absent", m{"a": m{}}, m{}, Diff{{Remove, fields.Path{"a"}, m{}, nil}}},
		// The order is stable: additions, removals, then common keys, each sorted.
		{"stable order",
			m{"d": 1, "c": 1, "b": m{"y": 1, "x": 1}, "a": 1},
			m{"f": 1, "e": 1, "b": m{"y": 2, "x": 2}, "a": 2},
			Diff{
				{Add, fields.Path{"e"}, nil, 1},
				{Add, fields.Path{"f"}, nil, 1},
				{Remove, fields.Path{"c"}, 1, nil},
				{Remove, fields.Path{"d"}, 1, nil},
				{Change, fields.Path{"a"}, 1, 2},
				{Change, fields.Path{"b", "x"}, 1, 2},
				{Change, fields.Path{"b", "y"}, 1, 2},
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Compute(tt.a, tt.b)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Compute() -want +got:\n%s", diff)
			}
		})
	}
}

// TestComputeStableAcrossRuns guards against map iteration order leaking
// into the result.
func TestComputeStableAcrossRuns(t *testing.T) {
	a := m{}
	b := m{}
	for _, k := range []string{"k1", "k2", "k3", "k4", "k5", "k6", "k7", "k8"} {
		a[k] = k
		b[k] = k + "!"
	}
	first := Compute(a, b)
	for range 50 {
		if diff := cmp.Diff(first, Compute(a, b)); diff != "" {
			t.Fatalf("Compute() is not stable -first +later:\n%s", diff)
		}
	}
}

func TestComputeDoesNotShareFieldPaths(t *testing.T) {
	// Paths are built by appending to a shared prefix; each item must own its path.
	got := Compute(m{"s": m{"a": 1, "b": 1, "c": 1}}, m{"s": m{"a": 2, "b": 2, "c": 2}})
	want := []string{"s.a", "s.b", "s.c"}
	var paths []string
	for _, item := range got {
		paths = append(paths, item.Field.String())
	}
	if diff := cmp.Diff(want, paths); diff != "" {
		t.Errorf("paths -want +got:\n%s", diff)
	}
}

// kopfDiff is the diff that Kopf's own reduction tests use.
var kopfDiff = Diff{
	{Add, fields.Path{"key1"}, nil, "new1"},
	{Change, fields.Path{"key2"}, "old2", "new2"},
	{Add, fields.Path{"key2", "suba"}, "olda", "newa"},
	{Remove, fields.Path{"key2", "subb"}, "oldb", "newb"},
	{Remove, fields.Path{"key3"}, "old3", nil},
	{Change, fields.Path{"key4"}, m{"suba": "olda", "subc": "oldc"}, m{"subb": "newb", "subc": "newc"}},
}

func TestReduce(t *testing.T) {
	tests := []struct {
		name string
		d    Diff
		path fields.Path
		want Diff
	}{
		{"empty path selects all", kopfDiff, nil, kopfDiff},
		{"children are re-rooted", kopfDiff, fields.Path{"key2"}, Diff{
			{Change, fields.Path{}, "old2", "new2"},
			{Add, fields.Path{"suba"}, "olda", "newa"},
			{Remove, fields.Path{"subb"}, "oldb", "newb"},
		}},
		{"parent change expanded into an addition", kopfDiff, fields.Path{"key4", "subb"}, Diff{{Add, fields.Path{}, nil, "newb"}}},
		{"parent change expanded into a removal", kopfDiff, fields.Path{"key4", "suba"}, Diff{{Remove, fields.Path{}, "olda", nil}}},
		{"parent change expanded into a change", kopfDiff, fields.Path{"key4", "subc"}, Diff{{Change, fields.Path{}, "oldc", "newc"}}},
		{"nonexistent key", kopfDiff, fields.Path{"nonexistent-key"}, nil},
		{"below an added scalar", kopfDiff, fields.Path{"key1", "nonexistent-key"}, nil},
		{"below a changed scalar", kopfDiff, fields.Path{"key2", "nonexistent-key"}, nil},
		{"below a removed scalar", kopfDiff, fields.Path{"key3", "nonexistent-key"}, nil},
		{"below a changed map", kopfDiff, fields.Path{"key4", "nonexistent-key"}, nil},
		{"below a changed map's scalar", kopfDiff, fields.Path{"key4", "suba", "nonexistent-key"}, nil},
		{"deep below a changed map", kopfDiff, fields.Path{"key4", "nonexistent-dict", "nonexistent-key"}, nil},
		{"whole spec added", Diff{{Add, fields.Path{"spec"}, nil, m{"field": "value", "other": 1}}}, fields.Path{"spec", "field"},
			Diff{{Add, fields.Path{}, nil, "value"}}},
		{"whole object added at the root", Diff{{Add, fields.Path{}, nil, m{"spec": m{"field": m{"x": 1}}}}}, fields.Path{"spec", "field"},
			Diff{{Add, fields.Path{}, nil, m{"x": 1}}}},
		{"whole spec removed", Diff{{Remove, fields.Path{"spec"}, m{"field": "value"}, nil}}, fields.Path{"spec", "field"},
			Diff{{Remove, fields.Path{}, "value", nil}}},
		{"parent change expanded into nested items", Diff{{Change, fields.Path{"spec"}, m{"f": m{"a": 1, "b": 1}}, m{"f": m{"a": 2, "c": 1}}}}, fields.Path{"spec", "f"},
			Diff{
				{Add, fields.Path{"c"}, nil, 1},
				{Remove, fields.Path{"b"}, 1, nil},
				{Change, fields.Path{"a"}, 1, 2},
			}},
		{"sibling with a shared name prefix", Diff{{Change, fields.Path{"spec", "fieldX"}, 1, 2}}, fields.Path{"spec", "field"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.d.Reduce(tt.path)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Reduce(%q) -want +got:\n%s", tt.path, diff)
			}
		})
	}
}

func TestReduceDoesNotAlterTheOriginal(t *testing.T) {
	d := Diff{{Change, fields.Path{"spec", "field", "x"}, 1, 2}}
	reduced := d.Reduce(fields.Path{"spec"})
	reduced[0].Field[0] = "mutated"
	if got := d[0].Field.String(); got != "spec.field.x" {
		t.Errorf("the original diff changed: %s", got)
	}
}

func TestString(t *testing.T) {
	tests := []struct {
		name string
		d    Diff
		want string
	}{
		{"empty", nil, "()"},
		{"one item has a trailing comma",
			Diff{{Change, fields.Path{"spec", "field"}, "value", "changed"}},
			"(('change', ('spec', 'field'), 'value', 'changed'),)"},
		{"one-element path has a trailing comma",
			Diff{{Add, fields.Path{"key"}, nil, "val"}},
			"(('add', ('key',), None, 'val'),)"},
		{"root path",
			Diff{{Remove, fields.Path{}, "x", nil}},
			"(('remove', (), 'x', None),)"},
		{"two items",
			Diff{{Change, fields.Path{"spec", "size"}, "42G", "76G"}, {Add, fields.Path{"spec", "n"}, nil, 1.0}},
			"(('change', ('spec', 'size'), '42G', '76G'), ('add', ('spec', 'n'), None, 1))"},
		{"booleans and numbers",
			Diff{{Change, fields.Path{"a"}, true, false}, {Change, fields.Path{"b"}, int64(100), 1.5}},
			"(('change', ('a',), True, False), ('change', ('b',), 100, 1.5))"},
		{"lists",
			Diff{{Change, fields.Path{"spec", "items"}, []any{"task1", "task2"}, []any{}}},
			"(('change', ('spec', 'items'), ['task1', 'task2'], []),)"},
		{"maps",
			Diff{{Add, fields.Path{"spec"}, nil, m{"b": []any{1.0, nil, true}, "a": m{"x": "y"}}}},
			"(('add', ('spec',), None, {'a': {'x': 'y'}, 'b': [1, None, True]}),)"},
		{"quotes as Python chooses them",
			Diff{{Change, fields.Path{"it's"}, "say \"hi\"", "it's"}},
			`(('change', ("it's",), 'say "hi"', "it's"),)`},
		{"both quotes and escapes",
			Diff{{Change, fields.Path{"k"}, `it's "x"`, "a\\b\nc\td\x01\x7f\u00a0é\u2028"}},
			`(('change', ('k',), 'it\'s "x"', 'a\\b\nc\td\x01\x7f\xa0é\u2028'),)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.d.String(); got != tt.want {
				t.Errorf("String() =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}
