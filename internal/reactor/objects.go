package reactor

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/internal/registry"
)

// kindObjects makes and reads the objects of one kind, typed or
// unstructured, for the reconciler, the daemons' host and the low-level
// handlers alike.
type kindObjects struct {
	kind *registry.Kind
	gvk  schema.GroupVersionKind
}

// newObject returns an empty object of the kind.
func (k kindObjects) newObject() client.Object {
	obj := k.kind.NewObject().(client.Object)
	if u, ok := obj.(*unstructured.Unstructured); ok {
		u.SetGroupVersionKind(k.gvk)
	}
	return obj
}

// body returns the object as a JSON-like map. Unstructured objects are used
// as they are (the cache gave us our own copy); typed ones are converted,
// which serialises them as the API server does for the same Go types.
func (k kindObjects) body(obj client.Object) (map[string]any, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u.Object, nil
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("convert %s %s to a map: %w", k.gvk.Kind, client.ObjectKeyFromObject(obj), err)
	}
	m["apiVersion"], m["kind"] = k.gvk.GroupVersion().String(), k.gvk.Kind
	return m, nil
}

// asAny keeps a nil map from becoming a non-nil interface value.
func asAny(m map[string]any) any {
	if m == nil {
		return nil
	}
	return m
}
