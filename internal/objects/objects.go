// Package objects makes and reads the objects of one kind, typed or
// unstructured, for the cycle, the daemons' host and the low-level
// handlers alike.
package objects

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/internal/registry"
)

// Kind makes and reads the objects of one registered kind, served as GVK.
type Kind struct {
	Registered *registry.Kind
	GVK        schema.GroupVersionKind
}

// New returns an empty object of the kind.
func (k Kind) New() client.Object {
	obj := k.Registered.NewObject().(client.Object)
	if u, ok := obj.(*unstructured.Unstructured); ok {
		u.SetGroupVersionKind(k.GVK)
	}
	return obj
}

// Body returns the object as a JSON-like map. An unstructured object's
// body is its own map, which the body shares with it (one read from the
// cache without a copy must not be modified through either); a typed one
// is converted, which serialises it as the API server does for the same Go
// types.
func (k Kind) Body(obj client.Object) (map[string]any, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u.Object, nil
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("convert %s %s to a map: %w", k.GVK.Kind, client.ObjectKeyFromObject(obj), err)
	}
	m["apiVersion"], m["kind"] = k.GVK.GroupVersion().String(), k.GVK.Kind
	return m, nil
}

// Copy returns a deep copy of obj and its body, as Body made it from obj:
// an unstructured object's body is the copy's own map; a typed object's
// body was converted, and shares nothing with obj, so it stays.
func (k Kind) Copy(obj client.Object, body map[string]any) (client.Object, map[string]any) {
	cp := obj.DeepCopyObject().(client.Object)
	if u, ok := cp.(*unstructured.Unstructured); ok {
		return cp, u.Object
	}
	cp.GetObjectKind().SetGroupVersionKind(k.GVK)
	return cp, body
}
