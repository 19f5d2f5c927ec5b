package ring

import (
	"encoding/json"
	"errors"
	"slices"
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
// another). The owner is granted the object too, the object's bucket
// label is set, and a handover request of an assigner before the ring's
// epoch goes.
//
// A finalizer, if given, is added too, unless the object has it or is
// being deleted (which admits no new finalizer): the operator's, on the
// objects of a kind that handlers or daemons work on, which their owner
// would add before its first handler anyway (docs/sharding.md, "One
// object, one name"). The finalizers are a list, which a merge patch
// replaces whole: the resourceVersion guards the rest of it.
func patchBody(k Keys, s seen, mv sharding.Move, finalizer string) ([]byte, error) {
	if s.resourceVersion == "" || s.uid == "" {
		return nil, errors.New("a guarded write needs the object's uid and resourceVersion")
	}
	if mv.Owner == "" {
		return nil, errors.New("an empty move writes nothing")
	}
	labels, annotations := map[string]any{k.Owner: mv.Owner}, map[string]any{k.Granted: mv.Owner, k.Next: nil}
	if s.bucket != "" {
		labels[k.Bucket] = s.bucket
	}
	dropForeign(labels, annotations, s.foreign) // the object is this ring's alone (foreign.go)
	meta := map[string]any{"uid": s.uid, "resourceVersion": s.resourceVersion, "labels": labels, "annotations": annotations}
	if finalizer != "" && !s.deleting && !slices.Contains(s.finalizers, finalizer) {
		meta["finalizers"] = append(slices.Clone(s.finalizers), finalizer)
	}
	return json.Marshal(map[string]any{"metadata": meta})
}

// tally counts what the assigner wrote to the objects that one sweep
// listed (the objects without a live owner, at one change of the ring's
// members), so that the change ends in one log line rather than one per
// object. A change that comes before the previous one's objects are all
// placed takes their place (the sweep lists them again) and keeps the
// writes counted so far: the ring settles once.
type tally struct {
	mu      sync.Mutex
	round   int // the members' generation whose objects are pending
	sources int // how many of its sources have not listed yet
	listed  map[string]bool
	pending map[key]struct{}
	total   int // objects listed in this round
	owned   int // objects given an owner
}

// summary is what one settled change of members wrote.
type summary struct {
	objects, owned int
}

// open starts counting for the members of the given round, whose sweep
// lists the given number of sources; true (with the summary) if there are
// none, so the change has settled already.
func (t *tally) open(round, sources int) (summary, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.round, t.sources = round, sources
	t.listed = map[string]bool{}
	t.pending = map[key]struct{}{}
	t.total = 0
	return t.settled()
}

// list records the objects that one source of the given round listed;
// true (with the summary) if that settles the round. A source's later
// listings (its watch began again) are not counted: what they find is
// placed all the same.
func (t *tally) list(round int, source string, keys []key) (summary, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if round != t.round || t.listed[source] {
		return summary{}, false
	}
	t.listed[source] = true
	t.sources--
	for _, k := range keys {
		if _, ok := t.pending[k]; !ok {
			t.pending[k] = struct{}{}
			t.total++
		}
	}
	return t.settled()
}

// done records that an object was placed with the members of the given
// round (writing the move, if wrote); true (with the summary) once the
// last pending object of the current round is placed. Placements with an
// earlier round's members do not count: the object is listed again.
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
	if wrote && mv.Owner != "" {
		t.owned++
	}
	return t.settled()
}

// settled resets the counts once every source has listed and nothing is
// pending, and says what they were.
func (t *tally) settled() (summary, bool) {
	if t.sources > 0 || len(t.pending) > 0 {
		return summary{}, false
	}
	s := summary{objects: t.total, owned: t.owned}
	t.total, t.owned = 0, 0
	t.sources = -1 // reported: later listings of the round count no more
	return s, true
}

// seen is what placing reads of an object, as last listed or watched:
// its uid and resourceVersion, its owner label and the ring's
// annotations, and other rings' keys if it has any (foreign.go). The
// assigner keeps it only until the object is placed.
type seen struct {
	uid, resourceVersion string
	now                  sharding.Placement
	foreign              []foreignRing
	// bucket is the object's bucket label as it should be.
	bucket string
	// finalizers are the object's; deleting: it has a deletionTimestamp.
	finalizers []string
	deleting   bool
}

// seenOf takes what placing reads from an object's metadata.
func seenOf(k Keys, o *metav1.PartialObjectMetadata) seen {
	return seen{uid: string(o.UID), resourceVersion: o.ResourceVersion, now: k.Placement(o.Labels, o.Annotations),
		foreign: foreignRingsOf(k, o.Labels, o.Annotations), bucket: BucketLabel(o.Namespace, o.Name),
		finalizers: o.Finalizers, deleting: o.DeletionTimestamp != nil}
}
