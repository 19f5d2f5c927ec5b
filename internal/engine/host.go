package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/internal/causes"
	"github.com/kopf-go/kopf/internal/clients"
	"github.com/kopf-go/kopf/internal/daemons"
	"github.com/kopf-go/kopf/internal/write"
	"github.com/kopf-go/kopf/pkg/patch"
)

// kindHost is the daemons' host for one kind (daemons.Host): it reads the
// objects for them, writes their patches, and asks for reconciles.
type kindHost struct {
	// k is the kind whose objects the daemons work on.
	k *kindState
	// done closes when the supervisor has stopped (nobody takes the
	// requests for reconciles then).
	done <-chan struct{}
}

var _ daemons.Host = (*kindHost)(nil)

// Fetch returns the object as the cache has it now, if it is still the
// same object (the same uid).
func (h *kindHost) Fetch(ctx context.Context, ref daemons.Ref) (causes.Object, error) {
	obj := h.k.objects.New()
	if err := h.k.clients.Get(ctx, types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}, obj); err != nil {
		return nil, fmt.Errorf("read %s %s: %w", h.k.objects.GVK.Kind, ref, err)
	}
	if obj.GetUID() != ref.UID {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: h.k.objects.GVK.Group, Resource: h.k.objects.GVK.Kind}, ref.Name)
	}
	return obj, nil
}

// Body returns a fetched object as a JSON-like map.
func (h *kindHost) Body(obj causes.Object) (map[string]any, error) {
	o, ok := obj.(client.Object)
	if !ok {
		return nil, fmt.Errorf("%T is not a Kubernetes object", obj)
	}
	return h.k.objects.Body(o)
}

// Apply writes a daemon's or timer's patch (or an on-event handler's) as
// a cycle's is written: status first, then the rest, both guarded by the
// object's identity (guard.go). The object is the one of the ref, as the
// cache has it now (its resourceVersion guards the status patch); one
// that is gone, or that another object has replaced under its name, gets
// nothing, and that is not an error. The write is remembered for the
// next cycle's consistency wait.
func (h *kindHost) Apply(ctx context.Context, ref daemons.Ref, p *patch.Patch) error {
	obj, err := h.target(ctx, ref)
	read := obj.GetResourceVersion()
	if err == nil {
		_, err = h.k.writer.Write(ctx, logr.Discard(), obj, p, write.KeepFinalizer)
	}
	if gone, ok := write.AsGone(err); ok {
		h.k.daemonLog.V(1).Info("Patching was skipped: the object is gone.", "namespace", ref.Namespace, "name", ref.Name,
			"uid", ref.UID, "replaced", gone.Replaced)
		return nil
	}
	if fenced, ok := write.AsFenced(err); ok {
		h.k.daemonLog.V(1).Info("Patching was skipped: the object is not this replica's any more.", "namespace", ref.Namespace, "name", ref.Name,
			"why", fenced.Err.Error())
		return nil
	}
	if v := obj.GetResourceVersion(); err == nil && v != read {
		h.k.memories.DaemonWrote(ref.UID, v)
	}
	return err
}

// target is the ref's object to write to, as the cache has it; a
// goneError if the cache has another object under its name. One that the
// cache lacks (the operator is frozen and has none, or the object left a
// ring member's share, or is gone) is read from the API server.
func (h *kindHost) target(ctx context.Context, ref daemons.Ref) (client.Object, error) {
	obj := h.k.objects.New()
	err := h.k.clients.Get(ctx, types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}, obj)
	switch {
	case err == nil && obj.GetUID() == ref.UID:
		return obj, nil
	case err == nil:
		obj.SetUID(ref.UID)
		return obj, h.k.writer.Gone(obj, true)
	case !errors.Is(err, clients.ErrFrozen) && !apierrors.IsNotFound(err):
		return obj, fmt.Errorf("read %s %s: %w", h.k.objects.GVK.Kind, ref, err)
	}
	obj.SetNamespace(ref.Namespace)
	obj.SetName(ref.Name)
	obj.SetUID(ref.UID)
	return obj, h.k.writer.Refresh(ctx, obj)
}

// Enqueue asks for a reconcile of the object.
// Label is the kind as the metrics name it.
func (h *kindHost) Label() string { return h.k.kindLabel }

func (h *kindHost) Enqueue(ref daemons.Ref) {
	select {
	case h.k.events <- requestFor(types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}):
	case <-h.done:
	}
}
