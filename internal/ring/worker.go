package ring

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"

	"github.com/kopf-go/kopf/internal/precondition"
	"github.com/kopf-go/kopf/internal/sharding"
)

// work places queued objects until the queue shuts down.
func (t *term) work(ctx context.Context) {
	for {
		k, shutdown := t.queue.Get()
		if shutdown {
			return
		}
		t.handle(ctx, k)
	}
}

// handle places one object as it was last seen. A write that fails with a
// conflict (the object changed since, or another object has its name now)
// is tried again with the object as it is now: read anew, unless a newer sighting has come meanwhile. Any
// other failure is tried again later.
func (t *term) handle(ctx context.Context, k key) {
	defer t.queue.Done(k)
	s, ok := t.take(k)
	if !ok {
		t.queue.Forget(k)
		return
	}
	t.placing.RLock()
	t.mu.Lock()
	live, stopping, round, e := t.members, t.stopping, t.round, t.epoch
	t.mu.Unlock()
	mv, wrote, err := t.place(ctx, k, s, live, sharding.Placing(live, stopping), e)
	t.placing.RUnlock()
	if apierrors.IsConflict(err) || precondition.UIDRefused(err) {
		t.a.s.Logger.V(1).Info("An object changed while it was placed; it is placed again.", "object", k.String())
		var again bool
		if again, err = t.reread(ctx, k); err == nil && again {
			t.queue.Forget(k)
			return // the tally counts it when it is placed as it is now
		}
		mv = sharding.Move{}
	}
	if err != nil {
		t.putBack(k, s)
		t.queue.AddRateLimited(k)
		if ctx.Err() == nil {
			t.a.s.Logger.Error(err, "An object could not be placed; it is tried again.", "object", k.String())
		}
		return
	}
	t.queue.Forget(k)
	if s, ok := t.tally.done(round, k, mv, wrote); ok {
		t.report(s)
	}
}

// reread queues an object again as the API server has it now; true if
// it did. One that is gone needs no owner. It asks with a merge patch
// that changes nothing: the API server answers it with the object under
// the name as it stores it (read afresh), writing nothing, so the
// assigner needs the patch it places with and no get on the kinds
// (docs/deploying.md, RBAC).
func (t *term) reread(ctx context.Context, k key) (bool, error) {
	o, err := t.resource(k).Patch(ctx, k.Name, types.MergePatchType, []byte("{}"), metav1.PatchOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("read %s %s: %w", t.a.s.Kinds[k.kind].Kind, k, err)
	}
	t.offer(k, o)
	return true, nil
}

// resource is the metadata client of one object.
func (t *term) resource(k key) metadata.ResourceInterface {
	// A cluster-scoped object's namespace is empty, which names no
	// namespace in the request.
	return t.byKind[k.kind].Namespace(k.Namespace)
}

// place decides the object's move among the live members and writes it;
// true if it wrote one. An object that is gone needs none. Objects being
// deleted are placed too: their deletion handlers need an owner. The
// object goes to one of placing (the live members that do not stop); a
// grant to any live one stands.
func (t *term) place(ctx context.Context, k key, s seen, live, placing []string, e sharding.Epoch) (sharding.Move, bool, error) {
	mv, ok := sharding.Place(sharding.ObjectKey(k.Namespace, k.Name), s.now, live, placing,
		func(member string) bool { return t.f.live.Doubtful(member, t.a.s.Clock.Now()) },
		e.IsRetired)
	if !ok {
		return mv, false, nil
	}
	if g := s.now.Granted; g != "" && g != mv.Owner && !slices.Contains(live, g) {
		// The object is taken from a member that was not live when this
		// placement began. It stays if the member is live now (the
		// members changed meanwhile: the next round places it), or if it
		// is one the follower never saw and the API server has its Lease.
		if t.f.live.IsLive(g, t.a.s.Clock.Now()) {
			return sharding.Move{}, false, nil
		}
		if t.f.live.Unseen(g) {
			alive, err := t.f.askUnseen(ctx, g)
			if err != nil {
				return mv, false, err
			}
			if alive {
				return sharding.Move{}, false, nil // the follower counts the member now
			}
		}
	}
	if t.heldByAnotherRing(ctx, k, s) {
		return sharding.Move{}, false, nil // looked at again later (foreign.go)
	}
	body, err := patchBody(t.a.keys, s, mv, t.a.s.finalizerOf(k.kind))
	if err != nil {
		return mv, false, err
	}
	if _, err := t.resource(k).Patch(ctx, k.Name, types.MergePatchType, body, metav1.PatchOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			return sharding.Move{}, false, nil
		}
		if apierrors.IsConflict(err) || precondition.UIDRefused(err) {
			return mv, false, err // placed anew by handle
		}
		return mv, false, fmt.Errorf("place %s %s: %w", t.a.s.Kinds[k.kind].Kind, k, err)
	}
	t.logMove(k, s.now, mv)
	return mv, true, nil
}

// logMove says what the assigner wrote to one object.
func (t *term) logMove(k key, was sharding.Placement, mv sharding.Move) {
	log := t.a.s.Logger.V(1).WithValues("kind", t.a.s.Kinds[k.kind].Kind, "object", k.String())
	switch {
	case mv.Owner == was.Granted:
		log.Info(fmt.Sprintf("Put the owner label of %s back to %s, to which it is granted.", k, mv.Owner),
			"owner", mv.Owner, "label", was.Owner)
	default:
		log.Info(fmt.Sprintf("Assigned %s to %s.", k, mv.Owner), "owner", mv.Owner, "previous", was.Granted)
	}
}
