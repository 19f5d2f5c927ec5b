package hierarchies

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestAdjustNamespace(t *testing.T) {
	tests := []struct {
		name      string
		child     string // the child's namespace
		namespace string // the namespace given
		forced    bool
		want      string
	}{
		{"unset: set", "", "provided", false, "provided"},
		{"unset, forced: set", "", "provided", true, "provided"},
		{"set: kept", "own", "provided", false, "own"},
		{"set, forced: overwritten", "own", "provided", true, "provided"},
		// A cluster-scoped owner gives no namespace.
		{"unset, cluster-scoped: stays unset", "", "", false, ""},
		{"set, cluster-scoped: kept", "own", "", false, "own"},
		{"set, cluster-scoped, forced: cleared", "own", "", true, ""},
	}
	for _, tt := range tests {
		var opts []NamespaceOption
		if tt.forced {
			opts = append(opts, Forced())
		}
		t.Run("typed/"+tt.name, func(t *testing.T) {
			child := newPod(metav1.ObjectMeta{Namespace: tt.child})
			AdjustNamespace(child, tt.namespace, opts...)
			if diff := cmp.Diff(tt.want, child.Namespace); diff != "" {
				t.Errorf("namespace -want +got:\n%s", diff)
			}
		})
		t.Run("unstructured/"+tt.name, func(t *testing.T) {
			child := newUnstructuredPod(map[string]any{})
			if tt.child != "" {
				child.SetNamespace(tt.child)
			}
			AdjustNamespace(child, tt.namespace, opts...)
			want := map[string]any{}
			if tt.want != "" {
				want["namespace"] = tt.want
			}
			if diff := cmp.Diff(want, child.Object["metadata"]); diff != "" {
				t.Errorf("metadata -want +got:\n%s", diff)
			}
		})
	}
}
