package engine

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// The engine's cache keeps objects as controller-runtime's transform
// would: without managedFields, and with everything else; typed objects
// go through controller-runtime's transform itself.
func TestStripManagedFields(t *testing.T) {
	object := func() *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
			"metadata": map[string]any{"name": "kex", "annotations": map[string]any{"a": "b"},
				"managedFields": []any{map[string]any{"manager": "kubectl", "operation": "Update", "apiVersion": "kopf.dev/v1",
					"fieldsType": "FieldsV1", "fieldsV1": map[string]any{"f:spec": map[string]any{"f:field": map[string]any{}}}}}},
			"spec": map[string]any{"field": "value"}}}
	}
	want, err := cache.TransformStripManagedFields()(object())
	if err != nil {
		t.Fatal(err)
	}
	got, err := stripManagedFields(object())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want.(*unstructured.Unstructured).Object, got.(*unstructured.Unstructured).Object); diff != "" {
		t.Errorf("stripManagedFields() -controller-runtime's +ours:\n%s", diff)
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(got.(*unstructured.Unstructured).Object, "metadata", "managedFields"); found {
		t.Error("managedFields are kept")
	}
	bare := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "kex"}}}
	if got, _ := stripManagedFields(bare); !cmp.Equal(got.(*unstructured.Unstructured).Object, map[string]any{"metadata": map[string]any{"name": "kex"}}) {
		t.Errorf("an object without managedFields changed: %v", got)
	}
	typed := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}}}
	if got, _ := stripManagedFields(typed); got.(*corev1.ConfigMap).ManagedFields != nil || got.(*corev1.ConfigMap).Name != "cm" {
		t.Errorf("a typed object: %+v", got)
	}
}
