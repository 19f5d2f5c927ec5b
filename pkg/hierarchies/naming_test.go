package hierarchies

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// names is a child's name and generateName.
type names struct{ Name, GenerateName string }

func TestHarmonizeNaming(t *testing.T) {
	const provided = "provided-name"
	generated := names{GenerateName: provided + "-"}
	exact := names{Name: provided}
	tests := []struct {
		name   string
		child  names
		forced bool
		strict bool
		want   names
	}{
		// Without names, the child is named in either mode.
		{"no names", names{}, false, false, generated},
		{"no names, strict", names{}, false, true, exact},
		{"no names, forced", names{}, true, false, generated},
		{"no names, forced, strict", names{}, true, true, exact},
		// Not forced: whatever name the child has is kept, strict or not.
		{"name", names{Name: "a"}, false, false, names{Name: "a"}},
		{"name, strict", names{Name: "a"}, false, true, names{Name: "a"}},
		{"generateName", names{GenerateName: "b"}, false, false, names{GenerateName: "b"}},
		{"generateName, strict", names{GenerateName: "b"}, false, true, names{GenerateName: "b"}},
		{"both", names{Name: "c", GenerateName: "d"}, false, false, names{Name: "c", GenerateName: "d"}},
		{"both, strict", names{Name: "c", GenerateName: "d"}, false, true, names{Name: "c", GenerateName: "d"}},
		// Forced: overwritten, and only one of the two names is left.
		{"name, forced", names{Name: "a"}, true, false, generated},
		{"name, forced, strict", names{Name: "a"}, true, true, exact},
		{"generateName, forced", names{GenerateName: "b"}, true, false, generated},
		{"generateName, forced, strict", names{GenerateName: "b"}, true, true, exact},
		{"both, forced", names{Name: "c", GenerateName: "d"}, true, false, generated},
		{"both, forced, strict", names{Name: "c", GenerateName: "d"}, true, true, exact},
	}
	for _, tt := range tests {
		var opts []NamingOption
		if tt.forced {
			opts = append(opts, Forced())
		}
		if tt.strict {
			opts = append(opts, Strict())
		}
		t.Run("typed/"+tt.name, func(t *testing.T) {
			child := newPod(metav1.ObjectMeta{Name: tt.child.Name, GenerateName: tt.child.GenerateName})
			if err := HarmonizeNaming(child, provided, opts...); err != nil {
				t.Fatal(err)
			}
			got := names{child.Name, child.GenerateName}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("names -want +got:\n%s", diff)
			}
		})
		t.Run("unstructured/"+tt.name, func(t *testing.T) {
			meta := map[string]any{}
			if tt.child.Name != "" {
				meta["name"] = tt.child.Name
			}
			if tt.child.GenerateName != "" {
				meta["generateName"] = tt.child.GenerateName
			}
			child := newUnstructuredPod(meta)
			if err := HarmonizeNaming(child, provided, opts...); err != nil {
				t.Fatal(err)
			}
			// The cleared name is gone from the map, not an empty string.
			want := map[string]any{}
			if tt.want.Name != "" {
				want["name"] = tt.want.Name
			}
			if tt.want.GenerateName != "" {
				want["generateName"] = tt.want.GenerateName
			}
			if diff := cmp.Diff(want, child.Object["metadata"]); diff != "" {
				t.Errorf("metadata -want +got:\n%s", diff)
			}
		})
	}
}

// TestHarmonizeNamingWithoutMetadata checks an unstructured child that has
// no metadata at all, as Kopf's "withoutmeta" cases.
func TestHarmonizeNamingWithoutMetadata(t *testing.T) {
	child := newUnstructuredPod(nil)
	if err := HarmonizeNaming(child, "provided-name"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]any{"generateName": "provided-name-"}, child.Object["metadata"]); diff != "" {
		t.Errorf("metadata -want +got:\n%s", diff)
	}
}

func TestHarmonizeNamingEmptyName(t *testing.T) {
	child := newPod(metav1.ObjectMeta{})
	err := HarmonizeNaming(child, "", Forced())
	if !errors.Is(err, errNoName) {
		t.Errorf("HarmonizeNaming(\"\") error = %v, want %v", err, errNoName)
	}
	if diff := cmp.Diff(names{}, names{child.Name, child.GenerateName}); diff != "" {
		t.Errorf("names -want +got:\n%s", diff)
	}
}
