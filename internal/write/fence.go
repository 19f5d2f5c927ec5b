package write

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/internal/jitter"
)

// A fenced writer writes to an object only while the object is still
// its replica's (a ring member's: the grant names it), and has the API
// server check that, not only its own view (docs/sharding.md, "Writes
// fenced by the API server"). Every patch, of the object and of /status,
// carries the resourceVersion that the write's decision saw, which the
// fence was checked against. The API server compares it before anything
// else, so a write that was held anywhere on its way (a slow webhook, a
// stalled etcd, a paused process) lands only if the object has not
// changed since, and a handover changes it. A conflict reads the object's
// live metadata (as Refresh does): if the fence still holds on it, the
// patch goes again with the fresh version (fencedAttempts in all); if not,
// nothing is written, and the error is a *FencedError.

// Fence tells whether this replica may write to the object as its
// metadata shows it; an error says why not.
type Fence func(obj metav1.Object) error

// FencedError is what a fenced write returns when the object is no longer
// its replica's: nothing of the write landed.
type FencedError struct {
	Kind string
	Key  types.NamespacedName
	Err  error
}

func (e *FencedError) Error() string {
	return fmt.Sprintf("%s %s is not this replica's to write any more: %v", e.Kind, e.Key, e.Err)
}

func (e *FencedError) Unwrap() error { return e.Err }

// AsFenced reports whether err says that the object is no longer this
// replica's.
func AsFenced(err error) (*FencedError, bool) {
	var fenced *FencedError
	ok := errors.As(err, &fenced)
	return fenced, ok
}

// WithFence makes the writer fenced (nil: not fenced, every write as
// before).
func (w *Writer) WithFence(f Fence) *Writer {
	w.fence = f
	return w
}

// Claim is the write that makes an object this replica's in the API
// server before the replica's first write of it: an object it adopted
// (docs/sharding.md, "Adoption") still carries its retired member's name
// in its owner label and grant. The write moves both to this replica,
// guarded by the resourceVersion the decision saw, so that from then on
// no write of the retired member lands, and the object's move is in the
// object. Nil for an object that needs none.
type Claim func(obj metav1.Object) map[string]any

// WithClaim has the writer claim adopted objects before it writes to them
// (nil: never), and tells wrote the object as each write left it (nil:
// nothing), so that a claimed object's copy between caches stays as the
// writes left it.
func (w *Writer) WithClaim(c Claim, wrote func(obj client.Object)) *Writer {
	w.claim, w.wrote = c, wrote
	return w
}

// claimFirst writes obj's claim, if it needs one, before anything else of
// a write: a conflict reads the live metadata and, while the fence holds,
// claims again with it.
func (w *Writer) claimFirst(ctx context.Context, obj client.Object) error {
	if w.claim == nil {
		return nil
	}
	return w.untilFenced(ctx, obj, w.refreshFenced, func() map[string]any {
		if body := w.claim(obj); body != nil {
			return withUID(obj, body)
		}
		return nil // claimed meanwhile, or not adopted any more
	})
}

// untilFenced sends the main patch that next makes of obj as it is; after
// a conflict it reads obj's live metadata with refresh, which checks the
// fence, and sends what next makes of it then, fencedAttempts times in
// all. Nil from next: nothing is left to send.
func (w *Writer) untilFenced(ctx context.Context, obj client.Object, refresh func(context.Context, client.Object) error, next func() map[string]any) error {
	for attempt := 1; ; attempt++ {
		body := next()
		if body == nil {
			return nil
		}
		err := w.send(ctx, obj, body, false)
		if !apierrors.IsConflict(err) || attempt == fencedAttempts {
			return err
		}
		if err := fencedPause(ctx, attempt); err != nil {
			return err
		}
		if err := refresh(ctx, obj); err != nil {
			return err
		}
	}
}

// fenced checks the fence against obj as it is now; nil if the writer
// has none.
func (w *Writer) fenced(obj client.Object) error {
	if w.fence == nil {
		return nil
	}
	if err := w.fence(obj); err != nil {
		return &FencedError{Kind: w.gvk.Kind, Key: client.ObjectKeyFromObject(obj), Err: err}
	}
	return nil
}

// sendMain sends a main patch. Unfenced, once, as it is. Fenced, guarded
// by obj's resourceVersion unless the patch names one already (a
// finalizer's change, whose conflict is the caller's to handle), and
// after a conflict again with the live version, while the fence holds.
func (w *Writer) sendMain(ctx context.Context, obj client.Object, main map[string]any) error {
	if w.fence == nil {
		return w.send(ctx, obj, main, false)
	}
	if meta, _ := main["metadata"].(map[string]any); meta["resourceVersion"] != nil {
		return w.send(ctx, obj, main, false)
	}
	return w.untilFenced(ctx, obj, w.refreshWritable, func() map[string]any {
		return withMeta(main, func(meta map[string]any) { meta["resourceVersion"] = obj.GetResourceVersion() })
	})
}

// fencedAttempts bounds the sends of one fenced main patch. The engine's
// own writers of one object (its cycle, its daemons and timers) conflict
// with each other where unfenced patches would not, so a fenced patch
// goes again more often than a status patch does, a little later each
// time (fencedPause), before the conflict is the write's error.
const fencedAttempts = 8

// fencedPause waits before the next attempt of a fenced patch: 10 ms
// doubling, with jitter, so that the object's other writers finish first.
func fencedPause(ctx context.Context, attempt int) error {
	d := jitter.Default().Apply(10 * time.Millisecond << min(attempt-1, 4))
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// refreshWritable is refreshFenced, and the claim of the object if it is
// adopted as it is now: a write that met a change goes again only to an
// object that is this replica's in the API server, as a first write does
// (claimFirst). The change may have been the object's move to a member
// that has been retired since, whose objects this replica adopts: its
// decision, on the object as it was, needed no claim.
func (w *Writer) refreshWritable(ctx context.Context, obj client.Object) error {
	if err := w.refreshFenced(ctx, obj); err != nil {
		return err
	}
	return w.claimFirst(ctx, obj)
}

// refreshFenced reads the object's live metadata into obj and checks the
// fence against it.
func (w *Writer) refreshFenced(ctx context.Context, obj client.Object) error {
	if err := w.Refresh(ctx, obj); err != nil {
		return err
	}
	return w.fenced(obj)
}
