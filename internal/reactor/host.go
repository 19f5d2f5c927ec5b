package reactor

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/kopf-go/kopf/internal/causes"
	"github.com/kopf-go/kopf/internal/daemons"
	"github.com/kopf-go/kopf/internal/patch"
)

// kindHost is the daemons' host for one kind (daemons.Host): it reads the
// objects for them, writes their patches, and asks for reconciles.
type kindHost struct {
	*kindState
	// done closes when the supervisor has stopped (nobody takes the
	// requests for reconciles then).
	done <-chan struct{}
}

var _ daemons.Host = (*kindHost)(nil)

// Fetch returns the object as the cache has it now, if it is still the
// same object (the same uid).
func (h *kindHost) Fetch(ctx context.Context, ref daemons.Ref) (causes.Object, error) {
	obj := h.newObject()
	if err := h.clients.get(ctx, types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}, obj); err != nil {
		return nil, fmt.Errorf("read %s %s: %w", h.gvk.Kind, ref, err)
	}
	if obj.GetUID() != ref.UID {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: h.gvk.Group, Resource: h.gvk.Kind}, ref.Name)
	}
	return obj, nil
}

// Body returns a fetched object as a JSON-like map.
func (h *kindHost) Body(obj causes.Object) (map[string]any, error) {
	o, ok := obj.(client.Object)
	if !ok {
		return nil, fmt.Errorf("%T is not a Kubernetes object", obj)
	}
	return h.body(o)
}

// Apply writes a daemon's or timer's patch as a cycle's is written (status
// first, then the rest; a vanished object is not an error), and remembers
// the write for the next cycle's consistency wait.
func (h *kindHost) Apply(ctx context.Context, ref daemons.Ref, p *patch.Patch) error {
	obj := h.newObject()
	obj.SetNamespace(ref.Namespace)
	obj.SetName(ref.Name)
	_, err := h.writer.write(ctx, logr.Discard(), obj, p, keepFinalizer)
	if v := obj.GetResourceVersion(); v != "" {
		h.memories.daemonWrote(ref.UID, v)
	}
	return err
}

// Enqueue asks for a reconcile of the object.
// Label is the kind as the metrics name it.
func (h *kindHost) Label() string { return h.kindLabel }

func (h *kindHost) Enqueue(ref daemons.Ref) {
	obj := h.newObject()
	obj.SetNamespace(ref.Namespace)
	obj.SetName(ref.Name)
	select {
	case h.events <- event.GenericEvent{Object: obj}:
	case <-h.done:
	}
}
