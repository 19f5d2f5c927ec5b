package indexing

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestReplaceAndRemove(t *testing.T) {
	var ix Index
	ix.Replace("ns/a/uid-a", map[any]any{"ns": "a", [2]string{"app", "x"}: "a"})
	ix.Replace("ns/b/uid-b", map[any]any{"ns": "b"})
	if diff := cmp.Diff([]any{"a", "b"}, ix.Get("ns")); diff != "" {
		t.Errorf("Get(ns) -want +got:\n%s", diff)
	}
	if diff := cmp.Diff([]any{"a"}, ix.Get([2]string{"app", "x"})); diff != "" {
		t.Errorf("a tuple-like key -want +got:\n%s", diff)
	}
	// A new result replaces the object's old contributions.
	ix.Replace("ns/a/uid-a", map[any]any{"other": 1})
	if diff := cmp.Diff([]any{"b"}, ix.Get("ns")); diff != "" {
		t.Errorf("after replacing a -want +got:\n%s", diff)
	}
	if ix.Has([2]string{"app", "x"}) {
		t.Error("an emptied key is still there")
	}
	ix.Remove("ns/b/uid-b")
	ix.Remove("ns/a/uid-a")
	if ix.Len() != 0 || len(ix.Keys()) != 0 || len(ix.Get("ns")) != 0 {
		t.Errorf("after removing everything: %d keys", ix.Len())
	}
}

func TestEntries(t *testing.T) {
	tests := []struct {
		name   string
		result any
		want   map[any]any
		wantOK bool
	}{
		{"nil: no change", nil, nil, false},
		{"a map of strings", map[string]string{"a": "1"}, map[any]any{"a": "1"}, true},
		{"a map with array keys", map[[2]string]bool{{"ns", "n"}: true}, map[any]any{[2]string{"ns", "n"}: true}, true},
		{"a scalar: key nil", "value", map[any]any{nil: "value"}, true},
		{"an empty map: remove", map[string]int{}, map[any]any{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := Entries(tt.result)
			if ok != tt.wantOK {
				t.Fatalf("Entries() ok=%v, want %v", ok, tt.wantOK)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Entries() -want +got:\n%s", diff)
			}
		})
	}
}

func TestIndices(t *testing.T) {
	var s Indices
	if s.Get("x") != nil {
		t.Fatal("an index that was never made exists")
	}
	ix := s.Ensure("x")
	if s.Ensure("x") != ix || s.Get("x") != ix {
		t.Error("Ensure made a second index")
	}
	var none *Indices
	if none.Get("x") != nil {
		t.Error("no indices at all must give no index")
	}
	ix.Replace("o", map[any]any{"k": 1})
	keys := ix.Keys()
	if !slices.Equal(keys, []any{"k"}) {
		t.Errorf("Keys() = %v", keys)
	}
}

func TestUnknownIndexReadsEmpty(t *testing.T) {
	var s Indices
	ix := s.Get("no-such-index")
	if ix != nil {
		t.Fatalf("Get of an unknown id = %v, want nil", ix)
	}
	if got := ix.Get("key"); len(got) != 0 {
		t.Errorf("Get = %v, want nothing", got)
	}
	if ix.Has("key") || ix.Len() != 0 || len(ix.Keys()) != 0 {
		t.Errorf("Has = %v, Len = %d, Keys = %v; want false, 0, none", ix.Has("key"), ix.Len(), ix.Keys())
	}
}
