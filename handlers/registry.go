// Package handlers is what operator authors import: register one function
// per cause (create, update, delete, resume, a field's change) for any
// Kubernetes kind, typed or unstructured, and add the engine to a
// controller-runtime manager (SetupWithManager) or run it standalone (Main).
//
//	reg := handlers.NewRegistry()
//	kex := handlers.ForKind(reg, "kopf.dev", "v1", "KopfExample")
//	handlers.OnCreate(kex, "create_fn", func(ctx context.Context, obj *unstructured.Unstructured, c *handlers.Cause) (any, error) {
//		return map[string]any{"message": "hello world"}, nil // lands in status.create_fn
//	})
//	handlers.Main(reg, handlers.Options{})
package handlers

import (
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/internal/registry"
)

// Registry holds an operator's handlers. There is no global registry: make
// one, register into it, and pass it to SetupWithManager or Main.
type Registry struct {
	reg registry.Registry
	// kinds finds an already registered kind by its Go type or GVK.
	kinds map[any]*registry.Kind
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{kinds: map[any]*registry.Kind{}} }

// Kind is a resource kind in a registry, with T the Go type its objects
// arrive as: a typed object such as *corev1.ConfigMap, or
// *unstructured.Unstructured.
type Kind[T client.Object] struct {
	reg  *Registry
	kind *registry.Kind
}

// For returns the kind of the typed objects T (e.g. *corev1.ConfigMap),
// whose group, version and kind come from the manager's scheme at setup.
// For unstructured objects, use ForKind.
func For[T client.Object](r *Registry) *Kind[T] {
	t := reflect.TypeFor[T]()
	if t == reflect.TypeFor[*unstructured.Unstructured]() {
		r.reg.Fail(fmt.Errorf("handlers.For[*unstructured.Unstructured] does not tell which kind to watch; use handlers.ForKind"))
	}
	if t.Kind() != reflect.Pointer {
		r.reg.Fail(fmt.Errorf("handlers.For[%s]: objects must be pointers to structs, such as *corev1.ConfigMap", t))
		return &Kind[T]{reg: r, kind: &registry.Kind{NewObject: func() registry.Object { var zero T; return zero }}}
	}
	if k, ok := r.kinds[t]; ok {
		return &Kind[T]{reg: r, kind: k}
	}
	k := &registry.Kind{NewObject: func() registry.Object { return reflect.New(t.Elem()).Interface().(T) }}
	r.kinds[t] = k
	r.reg.Kinds = append(r.reg.Kinds, k)
	return &Kind[T]{reg: r, kind: k}
}

// ForKind returns the kind with the given group, version and kind name
// (e.g. "kopf.dev", "v1", "KopfExample"; the core group is ""), whose
// objects arrive as *unstructured.Unstructured.
func ForKind(r *Registry, group, version, kind string) *Kind[*unstructured.Unstructured] {
	gvk := schema.GroupVersionKind{Group: group, Version: version, Kind: kind}
	if version == "" || kind == "" {
		r.reg.Fail(fmt.Errorf("handlers.ForKind(%q, %q, %q): the version and the kind are required", group, version, kind))
	}
	if k, ok := r.kinds[gvk]; ok {
		return &Kind[*unstructured.Unstructured]{reg: r, kind: k}
	}
	k := &registry.Kind{GVK: gvk, NewObject: func() registry.Object { return &unstructured.Unstructured{} }}
	r.kinds[gvk] = k
	r.reg.Kinds = append(r.reg.Kinds, k)
	return &Kind[*unstructured.Unstructured]{reg: r, kind: k}
}
