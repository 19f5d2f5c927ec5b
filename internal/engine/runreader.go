package engine

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// runReader reads the engine's kinds from the run's cache and, for a
// ring member that adopts objects, from its adoption caches, and reads an
// object that none of them has from the API server, once it is one of
// the replica's: a claimed object leaves an adoption cache before it
// enters the share's, and its reconcile in between must not take it for
// deleted (and stop its daemons).
type runReader struct {
	main  cache.Cache
	a     *adoption
	live  client.Reader
	fence func(obj metav1.Object) error
	// kinds are the engine's kinds' GVKs: other kinds are read from the
	// run's cache alone.
	kinds  map[string]bool
	scheme *runtime.Scheme
}

func (r *runReader) adopts(obj runtime.Object) bool {
	if len(r.a.current()) == 0 {
		return false
	}
	gvk, err := apiutil.GVKForObject(obj, r.scheme)
	if err != nil {
		return false
	}
	gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	return r.kinds[gvk.String()]
}

// newList is an empty list of the kind's objects: unstructured for an
// unstructured kind, else the scheme's list type.
func newList(r *kindState, scheme *runtime.Scheme) (client.ObjectList, error) {
	listGVK := r.objects.GVK.GroupVersion().WithKind(r.objects.GVK.Kind + "List")
	if _, ok := r.objects.New().(*unstructured.Unstructured); ok {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(listGVK)
		return list, nil
	}
	o, err := scheme.New(listGVK)
	if err != nil {
		return nil, err
	}
	list, ok := o.(client.ObjectList)
	if !ok {
		return nil, fmt.Errorf("%s is not a list", listGVK)
	}
	return list, nil
}

func (r *runReader) Get(ctx context.Context, key types.NamespacedName, obj client.Object, opts ...client.GetOption) error {
	err := r.main.Get(ctx, key, obj, opts...)
	if !apierrors.IsNotFound(err) || !r.adopts(obj) {
		return err
	}
	for _, c := range r.a.current() {
		if c.Get(ctx, key, obj, opts...) == nil && r.a.e.own.Adopts(obj) {
			return nil
		}
	}
	if r.live.Get(ctx, key, obj, opts...) == nil && r.fence(obj) == nil {
		return nil
	}
	return err
}

func (r *runReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := r.main.List(ctx, list, opts...); err != nil || !r.adopts(list) {
		return err
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return err
	}
	for _, c := range r.a.current() {
		more := list.DeepCopyObject().(client.ObjectList)
		if err := c.List(ctx, more, opts...); err != nil {
			return err
		}
		_ = meta.EachListItem(more, func(o runtime.Object) error {
			if obj, ok := o.(client.Object); ok && r.a.e.own.Adopts(obj) {
				items = append(items, o)
			}
			return nil
		})
	}
	return meta.SetList(list, items)
}
