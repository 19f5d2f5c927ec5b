package reactor

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/kopf-go/kopf/internal/causes"
	"github.com/kopf-go/kopf/internal/daemons"
	"github.com/kopf-go/kopf/internal/patch"
)

// The reconciler is the daemons' host for its kind (daemons.Host).
var _ daemons.Host = (*reconciler)(nil)

// Fetch returns the object as the cache has it now, if it is still the
// same object (the same uid).
func (r *reconciler) Fetch(ctx context.Context, ref daemons.Ref) (causes.Object, error) {
	obj := r.newObject()
	if err := r.get(ctx, types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}, obj); err != nil {
		return nil, fmt.Errorf("read %s %s: %w", r.gvk.Kind, ref, err)
	}
	if obj.GetUID() != ref.UID {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: r.gvk.Group, Resource: r.gvk.Kind}, ref.Name)
	}
	return obj, nil
}

// Body returns a fetched object as a JSON-like map.
func (r *reconciler) Body(obj causes.Object) (map[string]any, error) {
	o, ok := obj.(client.Object)
	if !ok {
		return nil, fmt.Errorf("%T is not a Kubernetes object", obj)
	}
	return r.body(o)
}

// Apply writes a daemon's or timer's patch: status first, then the rest.
// A vanished object is not an error.
func (r *reconciler) Apply(ctx context.Context, ref daemons.Ref, p *patch.Patch) error {
	obj := r.newObject()
	obj.SetNamespace(ref.Namespace)
	obj.SetName(ref.Name)
	main, status, err := r.split(ctx, p)
	if err != nil {
		return err
	}
	for _, part := range []struct {
		body   map[string]any
		status bool
	}{{status, true}, {main, false}} {
		if part.body == nil {
			continue
		}
		if err := r.send(ctx, obj, part.body, part.status); err != nil {
			if apierrors.IsNotFound(err) {
				return nil
			}
			return err
		}
		r.memories.daemonWrote(ref.UID, obj.GetResourceVersion())
	}
	return nil
}

// Enqueue asks for a reconcile of the object.
func (r *reconciler) Enqueue(ref daemons.Ref) {
	obj := r.newObject()
	obj.SetNamespace(ref.Namespace)
	obj.SetName(ref.Name)
	select {
	case r.events <- event.GenericEvent{Object: obj}:
	case <-r.sup.Done():
	}
}
