package ring

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

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

// handle places one object. A failed write (a conflict above all: the
// object changed since the cache showed it) is tried again later, with
// the object as the cache shows it then.
func (t *term) handle(ctx context.Context, k key) {
	defer t.queue.Done(k)
	t.mu.Lock()
	live, round := t.members, t.round
	t.mu.Unlock()
	mv, wrote, err := t.place(ctx, k, live)
	if err != nil {
		t.queue.AddRateLimited(k)
		switch {
		case ctx.Err() != nil:
		case apierrors.IsConflict(err):
			t.a.s.Logger.V(1).Info("An object changed while it was placed; it is placed again.", "object", k.String())
		default:
			t.a.s.Logger.Error(err, "An object could not be placed; it is tried again.", "object", k.String())
		}
		return
	}
	t.queue.Forget(k)
	if s, ok := t.tally.done(round, k, mv, wrote); ok {
		t.report(s)
	}
}

// place decides the object's move among the live members and writes it;
// true if it wrote one. An object that is gone needs none. Objects being
// deleted are placed too: their deletion handlers need an owner.
func (t *term) place(ctx context.Context, k key, live []string) (sharding.Move, bool, error) {
	gvk := t.a.s.Kinds[k.kind]
	obj := partial(gvk)
	if err := t.cache.Get(ctx, k.NamespacedName, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return sharding.Move{}, false, nil
		}
		return sharding.Move{}, false, fmt.Errorf("read %s %s: %w", gvk.Kind, k, err)
	}
	ring := t.a.s.Ring
	now := sharding.Placement{Owner: obj.Labels[OwnerLabel(ring)], Next: obj.Annotations[NextAnnotation(ring)]}
	mv, ok := sharding.Place(string(obj.UID), now, live)
	if !ok {
		return mv, false, nil
	}
	body, err := patchBody(ring, obj.ResourceVersion, mv)
	if err != nil {
		return mv, false, err
	}
	obj.SetGroupVersionKind(gvk)
	if err := t.a.writer.Patch(ctx, obj, client.RawPatch(types.MergePatchType, body)); err != nil {
		if apierrors.IsNotFound(err) {
			return sharding.Move{}, false, nil
		}
		return mv, false, fmt.Errorf("place %s %s: %w", gvk.Kind, k, err)
	}
	t.logMove(k, now, mv)
	return mv, true, nil
}

// logMove says what the assigner wrote to one object.
func (t *term) logMove(k key, was sharding.Placement, mv sharding.Move) {
	log := t.a.s.Logger.V(1).WithValues("kind", t.a.s.Kinds[k.kind].Kind, "object", k.String())
	switch {
	case mv.Owner != "":
		log.Info(fmt.Sprintf("Assigned %s to %s.", k, mv.Owner), "owner", mv.Owner, "previous", was.Owner)
	case mv.Next != "":
		log.Info(fmt.Sprintf("Asked %s to hand %s over to %s.", was.Owner, k, mv.Next), "owner", was.Owner, "next", mv.Next)
	case mv.ClearNext:
		log.Info(fmt.Sprintf("Called off the handover of %s to %s.", k, was.Next), "owner", was.Owner)
	}
}
