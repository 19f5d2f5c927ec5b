package handlers

import (
	"context"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/internal/registry"
	"github.com/kopf-go/kopf/pkg/cause"
)

// ChildKind is a kind of children that a resource's objects own: objects
// of kind C whose controller owner reference points to an object of the
// resource (the reference hierarchies.Adopt sets). Child handlers are
// registered on it with OnChild.
type ChildKind[O, C client.Object] struct {
	owner *Resource[O]
	kind  *registry.ChildKind
}

// ChildFunc is a child handler: it gets the owner, the child (its last
// state if it is deleted) and what became of it (cause.Child: existing,
// created, changed or deleted, with the child's old and new state). Its
// error is retried as a change handler's is: a Temporary one after its
// delay, an arbitrary one after the backoff, a Permanent one not at all.
// It writes nothing to the owner by itself: it puts the child back, or
// changes the owner, with the client (Client(ctx)).
type ChildFunc[O, C client.Object] func(ctx context.Context, owner O, child C, c *cause.Child) error

// Children declares that res's objects own children of the typed kind C
// (e.g. *corev1.ConfigMap), whose group, version and kind come from the
// manager's scheme at setup; for unstructured children, use
// ChildrenKind. Calling it again for the same C returns the same kind.
//
// The operator watches the children that hierarchies.Adopt made (by
// their hierarchies.OwnerKindLabel) in the namespaces it serves, and
// needs list and watch on their resource.
func Children[C client.Object, O client.Object](res *Resource[O]) *ChildKind[O, C] {
	t := reflect.TypeFor[C]()
	if t == reflect.TypeFor[*unstructured.Unstructured]() {
		res.reg.reg.Fail(fmt.Errorf("handlers.Children[*unstructured.Unstructured] does not tell which kind the children are; use handlers.ChildrenKind"))
	}
	if t.Kind() != reflect.Pointer {
		res.reg.reg.Fail(fmt.Errorf("handlers.Children[%s]: children must be pointers to structs, such as *corev1.ConfigMap", t))
		return &ChildKind[O, C]{owner: res, kind: &registry.ChildKind{}}
	}
	return &ChildKind[O, C]{owner: res, kind: res.childKind(t, schema.GroupVersionKind{},
		func() registry.Object { return reflect.New(t.Elem()).Interface().(C) })}
}

// ChildrenKind declares that res's objects own children of the given
// group, version and kind (the core group is ""), which arrive as
// *unstructured.Unstructured.
func ChildrenKind[O client.Object](res *Resource[O], group, version, kind string) *ChildKind[O, *unstructured.Unstructured] {
	gvk := schema.GroupVersionKind{Group: group, Version: version, Kind: kind}
	if version == "" || kind == "" {
		res.reg.reg.Fail(fmt.Errorf("handlers.ChildrenKind(%q, %q, %q): the version and the kind are required", group, version, kind))
	}
	return &ChildKind[O, *unstructured.Unstructured]{owner: res, kind: res.childKind(gvk, gvk,
		func() registry.Object { return &unstructured.Unstructured{} })}
}

// childKind returns the resource's child kind registered under key, or
// registers a new one.
func (res *Resource[T]) childKind(key any, gvk schema.GroupVersionKind, newObject func() registry.Object) *registry.ChildKind {
	if res.res.children == nil {
		res.res.children = map[any]*registry.ChildKind{}
	}
	if ck, ok := res.res.children[key]; ok {
		return ck
	}
	ck := &registry.ChildKind{GVK: gvk, NewObject: newObject}
	res.res.children[key] = ck
	res.res.kind.Children = append(res.res.kind.Children, ck)
	return ck
}

// OnChild registers a handler for what becomes of the children of the
// owner's kind: it runs when a child is created, changed or deleted, and
// for every child there when the watch begins (at the start, and after a
// freeze), with the owner and the child. Filters (Labels, Annotations,
// Field, Value) test the child; with Field, a changed child runs the
// handler only if that field changed, and the handler sees the field's
// old and new values. It is retried with the limits (Retries, Backoff,
// Timeout, Errors) as change handlers are, its progress kept in memory;
// the owner's change handlers do not run for it. A child whose owner is
// gone, or being deleted, runs no handler. See docs/children.md.
func OnChild[O, C client.Object](ck *ChildKind[O, C], id string, fn ChildFunc[O, C], opts ...ChildOption) {
	h := &registry.ChildHandler{}
	h.ID, h.Title = id, "Child handler"
	h.Fn = func(ctx context.Context, owner, child registry.Object, c *cause.Child) error {
		return fn(ctx, owner.(O), child.(C), c)
	}
	applyAll(target{handler: &h.Handler, filters: &h.Filters}, opts)
	if len(h.Field) > 0 {
		h.ID = registry.FieldID(h.ID, h.Field)
	}
	ck.kind.Handlers = append(ck.kind.Handlers, h)
}
