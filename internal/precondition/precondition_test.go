package precondition

import (
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Only the API server's refusal of the uid means another object: other
// refusals of a patch are failures, to be retried.
func TestUIDRefused(t *testing.T) {
	gk := schema.GroupKind{Group: "kopf.dev", Kind: "KopfExample"}
	gr := schema.GroupResource{Group: "kopf.dev", Resource: "kopfexamples"}
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"the uid", apierrors.NewInvalid(gk, "kex", field.ErrorList{field.Invalid(field.NewPath("metadata", "uid"), "u1", "field is immutable")}), true},
		{"a label", apierrors.NewInvalid(gk, "kex", field.ErrorList{field.Invalid(field.NewPath("metadata", "labels"), "x y", "invalid")}), false},
		{"a conflict", apierrors.NewConflict(gr, "kex", nil), false},
		{"not found", apierrors.NewNotFound(gr, "kex"), false},
		{"no error", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := UIDRefused(tt.err); got != tt.want {
				t.Errorf("UIDRefused(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}
