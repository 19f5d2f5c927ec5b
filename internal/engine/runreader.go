package engine

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// runReader reads the engine's kinds from the run's cache and, for a
// ring member that adopts objects, from its adoption caches. An object
// that this replica has just claimed leaves its adoption cache before it
// enters the share's; its reconcile in between must not take it for
// deleted (and stop its daemons), so it is read as it was claimed
// (kindState.moving), with no request to the API server. Nor may it read
// the adoption cache's copy from before the claim, which that cache holds
// until its watch brings the claim: a cycle on that copy would take the
// object for adopted still, and work on it after it was claimed and
// handed over to another member.
type runReader struct {
	main cache.Cache
	a    *adoption
	// kinds are the engine's kinds by GVK: other kinds are read from the
	// run's cache alone.
	kinds  map[string]*kindState
	scheme *runtime.Scheme
}

// adopts is the kind of obj (an object or a list) if it is one of the
// engine's and the replica adopts objects now; nil if not.
func (r *runReader) adopts(obj runtime.Object) *kindState {
	if !r.a.adopting.Load() {
		return nil // the standby caches hold only other members' objects
	}
	gvk, err := apiutil.GVKForObject(obj, r.scheme)
	if err != nil {
		return nil
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
	kind := r.adopts(obj)
	if err == nil && kind != nil {
		kind.moved(key)
	}
	if !apierrors.IsNotFound(err) || kind == nil {
		return err
	}
	for _, c := range r.a.current() {
		// The adoption cache's copy of an object whose claim this
		// replica sent is the one from before the claim, until the
		// cache hears of it: the claimed copy, below, is what it is now.
		if c.Get(ctx, key, obj, opts...) == nil && r.a.e.own.Adopts(obj) && !kind.claimSent(obj) {
			return nil
		}
	}
	if kind.readMoving(key, obj) {
		return nil
	}
	return err
}

func (r *runReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := r.main.List(ctx, list, opts...); err != nil {
		return err
	}
	kind := r.adopts(list)
	if kind == nil {
		return nil
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
			if obj, ok := o.(client.Object); ok && r.a.e.own.Adopts(obj) && !kind.claimSent(obj) {
				items = append(items, o)
			}
			return nil
		})
	}
	return meta.SetList(list, items)
}
