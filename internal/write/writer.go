// Package write turns what a cycle decided into merge patches of one
// kind's objects, each guarded by the object's identity (guard.go): the
// status part to /status where the kind has it, the rest (with the
// finalizer change) to the object. The cycle writes through it, and so do
// the daemons, timers and on-event handlers of the kind.
package write

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/kopf-go/kopf/internal/mergepatch"
	"slices"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/internal/clients"
	"github.com/kopf-go/kopf/internal/contain"
	"github.com/kopf-go/kopf/internal/metrics"
	"github.com/kopf-go/kopf/internal/precondition"
	"github.com/kopf-go/kopf/pkg/patch"
)

// Timeout bounds a cycle's write once the operator is stopping or
// freezing: the write outlives that cancellation, because its handlers have
// already run, and a lost write would run them again after the restart.
const Timeout = 30 * time.Second

// Finalizer is what a write does to the operator's finalizer.
type Finalizer int

const (
	KeepFinalizer Finalizer = iota
	AddFinalizer
	RemoveFinalizer
)

// Writer writes the patches of one kind's objects.
type Writer struct {
	gvk       schema.GroupVersionKind
	finalizer string
	clients   *clients.Current
	status    *StatusProbe
	// timeout bounds a cycle's write after its context is cancelled.
	timeout time.Duration
	// conditions: the kind's status.conditions are the engine's too
	// (conditions.go).
	conditions bool
	// fence, if set, is checked before every write, and the API server
	// checks that nothing changed since (fence.go).
	fence Fence
	// claim, if set, makes an adopted object this replica's before the
	// first write to it (fence.go).
	claim Claim
	// wrote, if set, is told the object as every write left it.
	wrote func(obj client.Object)
}

// New is the writer of the kind's objects with the operator's finalizer,
// through the kind's clients; status tells whether the kind has /status.
// timeout bounds a cycle's write once its context is cancelled (Timeout).
func New(gvk schema.GroupVersionKind, finalizer string, cs *clients.Current, status *StatusProbe, timeout time.Duration) *Writer {
	return &Writer{gvk: gvk, finalizer: finalizer, clients: cs, status: status, timeout: timeout}
}

// Commit writes a cycle's patch and finalizer change. It does so even if
// ctx is cancelled meanwhile (a stop or a freeze after the handlers ran),
// bounded by the writer's timeout. It reports a conflict on the finalizer,
// after writing the rest anyway, and a *GoneError if the object is gone.
func (w *Writer) Commit(ctx context.Context, log logr.Logger, obj client.Object, p *patch.Patch, fin Finalizer) (conflict bool, err error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.timeout)
	defer cancel()
	return w.Write(ctx, log, obj, p, fin)
}

// Acknowledge writes a handover's acknowledgement (the owner label and
// the grant moved to the next member) in one write guarded by the
// object's resourceVersion (in ack) and uid, bounded as commit is.
func (w *Writer) Acknowledge(ctx context.Context, obj client.Object, ack map[string]any) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.timeout)
	defer cancel()
	// Not fenced: it is the write that moves the object, or puts a label
	// back on an object that is not this replica's; its resourceVersion
	// guards it.
	return w.send(ctx, obj, withUID(obj, ack), false)
}

// Write sends the status patch (where there is a status subresource) and
// then the main patch, which also carries a finalizer change computed
// against the freshest object known, guarded by its resourceVersion. Both
// are guarded by the object's identity (guard.go): an object that is gone
// (deleted, or deleted and created anew under its name) gets nothing, and
// the error is a *GoneError.
func (w *Writer) Write(ctx context.Context, log logr.Logger, obj client.Object, p *patch.Patch, fin Finalizer) (conflict bool, err error) {
	if w.wrote != nil {
		defer func() { w.wrote(obj) }()
	}
	main, status, err := w.split(ctx, p)
	if err != nil {
		return false, err
	}
	if status != nil || main != nil || fin != KeepFinalizer {
		// The decision's own view first: an object that the cache or a
		// live read shows moved gets nothing sent (a daemon's write after
		// a handover, say).
		if err := w.fenced(obj); err != nil {
			return false, err
		}
		if err := w.claimFirst(ctx, obj); err != nil {
			return false, err
		}
	}
	if status != nil {
		if err := w.sendStatus(ctx, obj, status); err != nil {
			return false, err
		}
	}
	if fin != KeepFinalizer {
		main = w.withFinalizer(obj, fin, main)
	}
	if main == nil {
		return false, nil
	}
	main = withUID(obj, main)
	err = w.sendMain(ctx, obj, main)
	if apierrors.IsConflict(err) && fin != KeepFinalizer {
		log.V(1).Info("The object changed while its finalizer was being updated; retrying in the next cycle.")
		rest := withoutFinalizer(main)
		if rest == nil {
			return true, nil
		}
		if w.fence != nil {
			// The conflict's change may be the object's move.
			if err := w.refreshWritable(ctx, obj); err != nil {
				return true, err
			}
		}
		return true, w.sendMain(ctx, obj, withUID(obj, rest))
	}
	return false, err
}

// split divides a patch into what goes to /status and what goes to the
// object itself; without a status subresource, everything goes to the
// object.
func (w *Writer) split(ctx context.Context, p *patch.Patch) (main, status map[string]any, err error) {
	withStatus, err := w.status.Has(ctx)
	if err != nil {
		return nil, nil, err
	}
	if !withStatus {
		return mergepatch.Whole(p), nil, nil
	}
	main, status = mergepatch.Split(p)
	return main, status, nil
}

// withFinalizer adds the finalizer list and a resourceVersion precondition
// to the main patch: a merge patch replaces lists whole, so the version
// check is what keeps other controllers' finalizers safe.
func (w *Writer) withFinalizer(obj client.Object, fin Finalizer, main map[string]any) map[string]any {
	finalizers := slices.Clone(obj.GetFinalizers())
	switch fin {
	case AddFinalizer:
		if !slices.Contains(finalizers, w.finalizer) {
			finalizers = append(finalizers, w.finalizer)
		}
	case RemoveFinalizer:
		finalizers = slices.DeleteFunc(finalizers, func(f string) bool { return f == w.finalizer })
	}
	return withMeta(main, func(meta map[string]any) {
		if len(finalizers) == 0 {
			meta["finalizers"] = nil
		} else {
			list := make([]any, len(finalizers))
			for i, f := range finalizers {
				list[i] = f
			}
			meta["finalizers"] = list
		}
		meta["resourceVersion"] = obj.GetResourceVersion()
	})
}

// withoutFinalizer is the main patch minus the finalizer change and its
// preconditions; nil if nothing else is left.
func withoutFinalizer(main map[string]any) map[string]any {
	rest := map[string]any{}
	for k, v := range main {
		if k != "metadata" {
			rest[k] = v
			continue
		}
		meta := map[string]any{}
		for mk, mv := range v.(map[string]any) {
			if mk != "finalizers" && mk != "resourceVersion" && mk != "uid" {
				meta[mk] = mv
			}
		}
		if len(meta) > 0 {
			rest["metadata"] = meta
		}
	}
	if len(rest) == 0 {
		return nil
	}
	return rest
}

// send applies one merge patch. The API server answers with the object's
// metadata only: the cycle needs nothing else of the answer (the next one
// reads the object from the cache), and decoding whole objects was the
// largest share of a cycle's CPU. The answer's metadata (resourceVersion
// above all) is copied into obj; its spec and status stay as they were.
func (w *Writer) send(ctx context.Context, obj client.Object, body map[string]any, status bool) error {
	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(w.gvk)
	return w.sendInto(ctx, obj, body, status, meta)
}

// sendInto is send with the answer decoded into answer (an empty object
// of the kind), for a write that needs more of it than the metadata.
func (w *Writer) sendInto(ctx context.Context, obj client.Object, body map[string]any, status bool, answer client.Object) error {
	// A value that a handler put into its patch may carry an encoding of
	// its own (MarshalJSON), which runs here, outside the handler's call.
	data, err := contain.Result(func() ([]byte, error) { return json.Marshal(body) })
	if p, ok := err.(*contain.Panic); ok {
		logr.FromContextOrDiscard(ctx).Error(p, "A value in the patch panicked while it was encoded.", "stack", string(p.Stack))
		metrics.CallbackPanicked(metrics.Kind(w.gvk), metrics.CallbackEncoding, "")
	}
	if err != nil {
		return fmt.Errorf("encode the patch: %w", err)
	}
	p := client.RawPatch(types.MergePatchType, data)
	meta := answer
	meta.SetNamespace(obj.GetNamespace())
	meta.SetName(obj.GetName())
	if status {
		err = w.clients.Writing().Status().Patch(ctx, meta, p)
	} else {
		err = w.clients.Writing().Patch(ctx, meta, p)
	}
	switch {
	case err == nil:
		copyMetadata(obj, meta)
		return nil
	case apierrors.IsNotFound(err):
		return w.Gone(obj, false)
	case precondition.UIDRefused(err):
		return w.Gone(obj, true)
	case apierrors.IsConflict(err):
		return err
	}
	return fmt.Errorf("patch %s %s: %w", w.gvk.Kind, client.ObjectKeyFromObject(obj), err)
}

// copyMetadata brings a patch's answer into the cycle's object: what a
// merge patch can change in metadata, and what the API server changes
// with every write.
func copyMetadata(obj client.Object, from metav1.Object) {
	obj.SetResourceVersion(from.GetResourceVersion())
	obj.SetGeneration(from.GetGeneration())
	obj.SetAnnotations(from.GetAnnotations())
	obj.SetLabels(from.GetLabels())
	obj.SetFinalizers(from.GetFinalizers())
	obj.SetOwnerReferences(from.GetOwnerReferences())
	obj.SetDeletionTimestamp(from.GetDeletionTimestamp())
	obj.SetManagedFields(from.GetManagedFields())
}

// LogGone says that a write was skipped because its object is gone.
func LogGone(log logr.Logger, gone *GoneError) {
	if gone.Replaced {
		log.V(1).Info("Patching was skipped: the object was deleted, and another one has its name now.", "uid", gone.UID)
		return
	}
	log.V(1).Info("Patching was skipped: the object does not exist anymore.")
}
