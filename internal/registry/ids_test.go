package registry

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kopf-go/kopf/pkg/fields"
)

func TestIDs(t *testing.T) {
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"no field", FieldID("fn", nil), "fn"},
		{"a field", FieldID("fn", fields.Path{"spec", "x"}), "fn/spec.x"},
		{"a sub-handler", SubID("parent", "child"), "parent/child"},
		{"a sub-handler of a field", SubID("parent", FieldID("child", fields.Path{"spec"})), "parent/child/spec"},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, tt.got); diff != "" {
			t.Errorf("%s: -want +got:\n%s", tt.name, diff)
		}
	}
}
