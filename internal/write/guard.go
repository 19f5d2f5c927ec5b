package write

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Every write of the engine to an object carries a precondition that the
// API server checks, so that a write decided for one object never lands
// on another that took its name since (one deleted and created anew while
// a handler ran). Patches of the object itself carry its uid: uid is
// immutable, and the API server refuses a patch that names another one
// with 422 Invalid on metadata.uid. Patches of /status cannot: a custom
// resource's status strategy copies the stored object's metadata over the
// patched one before it validates, so a uid there is ignored. They carry
// the resourceVersion that the write's decision saw instead, which the API
// server compares before any strategy; one that conflicts reads the
// object's metadata live (not from the cache): the same uid means the
// object only changed, and the patch goes again with the fresh version
// (statusAttempts in all); another uid, or none, means it is gone, and
// nothing is written (docs/ARCHITECTURE.md, "Writes").

// statusAttempts bounds the sends of one status patch to an object that
// keeps changing meanwhile; after them, the conflict is the write's
// error, and the cycle keeps its changes for the next one.
const statusAttempts = 3

// GoneError is what a write returns when the object it was decided for no
// longer exists: nothing of that write landed.
type GoneError struct {
	Kind string
	Key  types.NamespacedName
	UID  types.UID
	// Replaced: another object has the name now; else none has.
	Replaced bool
}

func (e *GoneError) Error() string {
	if e.Replaced {
		return fmt.Sprintf("%s %s with uid %s is gone: another object has its name now", e.Kind, e.Key, e.UID)
	}
	return fmt.Sprintf("%s %s with uid %s is gone", e.Kind, e.Key, e.UID)
}

// AsGone reports whether err says that the object is gone.
func AsGone(err error) (*GoneError, bool) {
	var gone *GoneError
	ok := errors.As(err, &gone)
	return gone, ok
}

// Gone is the GoneError of obj.
func (w *Writer) Gone(obj client.Object, replaced bool) *GoneError {
	return &GoneError{Kind: w.gvk.Kind, Key: client.ObjectKeyFromObject(obj), UID: obj.GetUID(), Replaced: replaced}
}

// withMeta returns a copy of a main patch whose metadata set adds to,
// leaving the patch it came from (which may be kept for the next cycle)
// as it was.
func withMeta(main map[string]any, set func(meta map[string]any)) map[string]any {
	out := make(map[string]any, len(main)+1)
	for k, v := range main {
		out[k] = v
	}
	meta := map[string]any{}
	if m, ok := main["metadata"].(map[string]any); ok {
		for k, v := range m {
			meta[k] = v
		}
	}
	set(meta)
	out["metadata"] = meta
	return out
}

// attempts bounds the sends of one status patch: more, and paused, for a
// fenced writer, whose every patch conflicts with the object's other
// writers (fence.go).
func (w *Writer) attempts() int {
	if w.fence != nil {
		return fencedAttempts
	}
	return statusAttempts
}

// withUID makes the object's uid the main patch's precondition.
func withUID(obj client.Object, main map[string]any) map[string]any {
	return withMeta(main, func(meta map[string]any) { meta["uid"] = string(obj.GetUID()) })
}

// sendStatus writes a status patch guarded by the object's
// resourceVersion as obj has it (as read, or as this write's previous
// patch answered), going again after a conflict with the same object.
func (w *Writer) sendStatus(ctx context.Context, obj client.Object, status map[string]any) error {
	if obj.GetResourceVersion() == "" {
		// Nothing in the engine writes without a version; should anything
		// come to, the live one is read rather than none sent.
		if err := w.Refresh(ctx, obj); err != nil {
			return err
		}
	}
	for attempt := 1; ; attempt++ {
		guarded := withMeta(status, func(meta map[string]any) { meta["resourceVersion"] = obj.GetResourceVersion() })
		err := w.send(ctx, obj, guarded, true)
		if gone, ok := AsGone(err); ok && !gone.Replaced {
			// A 404 of /status is the object's absence, or the
			// subresource's (a CRD that no longer has it): only the object
			// itself tells, and only its absence makes the object gone.
			if err := w.Refresh(ctx, obj); err != nil {
				return err
			}
			return fmt.Errorf("patch the status of %s %s: the status subresource is not served", w.gvk.Kind, client.ObjectKeyFromObject(obj))
		}
		if !apierrors.IsConflict(err) || attempt == w.attempts() {
			return err
		}
		if w.fence != nil {
			if err := fencedPause(ctx, attempt); err != nil {
				return err
			}
		}
		if status, err = w.refreshStatus(ctx, obj, status); err != nil {
			return err
		}
		if err := w.fenced(obj); err != nil {
			return err
		}
		// As refreshWritable: an object that moved to a member retired
		// since, which this replica adopts, is claimed first.
		if err := w.claimFirst(ctx, obj); err != nil {
			return err
		}
	}
}

// Refresh learns the object's live resourceVersion (a cache may lag
// behind the conflict it explains) and takes it into obj if it is still
// the same object; a *GoneError if not. It asks with a patch that changes
// nothing but names the uid: the API server answers a no-op patch with
// the stored object (read afresh, not from its watch cache) without
// writing, and refuses it if another object has the name now. So the
// engine needs no `get` on the kinds it handles, only the `patch` it
// writes with (docs/deploying.md, RBAC).
func (w *Writer) Refresh(ctx context.Context, obj client.Object) error {
	if err := w.send(ctx, obj, withUID(obj, nil), false); err != nil {
		if _, ok := AsGone(err); ok {
			return err
		}
		return fmt.Errorf("read %s %s: %w", w.gvk.Kind, client.ObjectKeyFromObject(obj), err)
	}
	return nil
}
