package ring

import (
	"encoding/json"
	"errors"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kopf-go/kopf/internal/sharding"
)

// key names one object the assigner places: its kind (an index into
// AssignerSettings.Kinds) and its namespace and name.
type key struct {
	kind int
	types.NamespacedName
}

// patchBody is the JSON merge patch of the assigner's write of a move:
// only the owner label and the ring's annotations, and the object's uid
// and resourceVersion as the assigner saw them, so that the write fails
// if the object changed since (its owner may have moved the label
// meanwhile) or is another one now (deleted and created anew under its
// name: the uid is immutable, so the API server refuses a patch naming
// another). An owner set directly is granted the object too, and the
// handover request is the move's own or none: an earlier request was for
// an earlier owner.
func patchBody(k Keys, s seen, mv sharding.Move) ([]byte, error) {
	if s.resourceVersion == "" || s.uid == "" {
		return nil, errors.New("a guarded write needs the object's uid and resourceVersion")
	}
	meta := map[string]any{"uid": s.uid, "resourceVersion": s.resourceVersion}
	var next any // nil removes the request
	if mv.Next != "" {
		next = mv.Next
	}
	switch {
	case mv.Owner != "":
		meta["labels"] = map[string]any{k.Owner: mv.Owner}
		meta["annotations"] = map[string]any{k.Granted: mv.Owner, k.Next: next}
	case mv.Next != "", mv.ClearNext:
		meta["annotations"] = map[string]any{k.Next: next}
	default:
		return nil, errors.New("an empty move writes nothing")
	}
	return json.Marshal(map[string]any{"metadata": meta})
}

// tally counts what the assigner wrote to the objects that one change of
// the ring's members queued, so that the change ends in one log line
// rather than one per object. A change that comes before the previous
// one's objects are all placed takes their place (every object is queued
// again) and keeps the writes counted so far: the ring settles once.
type tally struct {
	mu      sync.Mutex
	round   int // the members' generation whose objects are pending
	pending map[key]struct{}
	total   int // objects queued by the latest change
	owned   int // objects given an owner directly
	asked   int // handover requests written
}

// summary is what one settled change of members wrote.
type summary struct {
	objects, owned, asked int
}

// open starts counting the objects queued for the members of the given
// round; true (with the summary) if there are none, so the change has
// settled already.
func (t *tally) open(round int, keys []key) (summary, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.round = round
	t.pending = make(map[key]struct{}, len(keys))
	for _, k := range keys {
		t.pending[k] = struct{}{}
	}
	t.total = len(t.pending)
	return t.settled()
}

// done records that an object was placed with the members of the given
// round (writing the move, if wrote); true (with the summary) once the
// last pending object of the current round is placed. Placements with an
// earlier round's members do not count: the object is queued again.
func (t *tally) done(round int, k key, mv sharding.Move, wrote bool) (summary, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if round != t.round {
		return summary{}, false
	}
	if _, ok := t.pending[k]; !ok {
		return summary{}, false
	}
	delete(t.pending, k)
	switch {
	case wrote && mv.Owner != "":
		t.owned++
	case wrote && mv.Next != "":
		t.asked++
	}
	return t.settled()
}

// settled resets the counts once nothing is pending, and says what they
// were.
func (t *tally) settled() (summary, bool) {
	if len(t.pending) > 0 {
		return summary{}, false
	}
	s := summary{objects: t.total, owned: t.owned, asked: t.asked}
	t.total, t.owned, t.asked = 0, 0, 0
	return s, true
}

// seen is what placing reads of an object, as last listed or watched:
// its uid and resourceVersion, and its owner label and the ring's
// annotations. The assigner keeps it only until the object is placed.
type seen struct {
	uid, resourceVersion string
	now                  sharding.Placement
}

// seenOf takes what placing reads from an object's metadata.
func seenOf(k Keys, o *metav1.PartialObjectMetadata) seen {
	return seen{uid: string(o.UID), resourceVersion: o.ResourceVersion, now: k.Placement(o.Labels, o.Annotations)}
}
