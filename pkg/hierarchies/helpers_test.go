package hierarchies

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The owner of most tests: a namespaced KopfExample with labels, as
// Kopf's tests use.
const (
	ownerAPIVersion = "kopf.dev/v1"
	ownerKind       = "KopfExample"
	ownerName       = "kopf-example-1"
	ownerNamespace  = "owner-namespace"
	ownerUID        = "owner-uid"
)

var kopfExampleGVK = schema.GroupVersionKind{Group: "kopf.dev", Version: "v1", Kind: ownerKind}

// unstructuredOwner is the KopfExample as an unstructured object.
func unstructuredOwner() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": ownerAPIVersion,
		"kind":       ownerKind,
		"metadata": map[string]any{
			"name":      ownerName,
			"namespace": ownerNamespace,
			"uid":       ownerUID,
			"labels":    map[string]any{"label-1": "value-1", "label-2": "value-2"},
		},
	}}
}

// typedOwner is a Deployment owner; withTypeMeta says whether its
// TypeMeta is filled in (objects from controller-runtime's cache have it
// empty).
func typedOwner(withTypeMeta bool) *appsv1.Deployment {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{
		Name: "owner-deployment", Namespace: ownerNamespace, UID: "deployment-uid",
		Labels: map[string]string{"app": "owner"},
	}}
	if withTypeMeta {
		d.TypeMeta = metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}
	}
	return d
}

// clusterOwner is a cluster-scoped owner: a Node, typed.
func clusterOwner() *corev1.Node {
	return &corev1.Node{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
		ObjectMeta: metav1.ObjectMeta{Name: "node-1", UID: "node-uid", Labels: map[string]string{"zone": "a"}},
	}
}

// testScheme knows the core and apps types.
func testScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := appsv1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}

// podSpec is a minimal pod spec, to see that it survives the changes.
func podSpec() corev1.PodSpec {
	return corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox"}}}
}

// newPod returns a typed Pod child with the given metadata.
func newPod(meta metav1.ObjectMeta) *corev1.Pod {
	return &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: meta, Spec: podSpec()}
}

// newUnstructuredPod returns an unstructured Pod child with the given
// metadata (nil: no metadata at all).
func newUnstructuredPod(meta map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1",
		"kind":       "Pod",
		"spec":       map[string]any{"containers": []any{map[string]any{"name": "main", "image": "busybox"}}},
	}}
	if meta != nil {
		u.Object["metadata"] = meta
	}
	return u
}
