package share

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/internal/ownership"
	"github.com/kopf-go/kopf/internal/ring"
	"github.com/kopf-go/kopf/internal/sharding"
)

// adopting remembers, for each retired member whose objects this member
// adopts, the buckets its adoption caches select already, and the
// standby caches that select buckets whatever their owner. A member's
// buckets of a retired member only grow while it adopts from it (an
// adopter's death gives its buckets to the others; a join gives nothing),
// so a new bucket gets a cache of its own beside those running, and no
// running cache is ever stopped and listed again.
type adopting struct {
	mu      sync.Mutex
	covered map[string]map[string]bool   // by retired member: bucket → selected
	sels    map[string][]labels.Selector // by retired member, in the order made
	standby []*standing                  // in the order made
	// pausedUntil: no standby cache is added before it, since a takeover
	// began (standbyPause).
	pausedUntil time.Time
	// claimFirst tells, for each orphaned retirement, whether its objects
	// are claimed before any work (Ownership.claimFirst).
	claimFirst map[string]bool
	// later holds, by retired member, the first selection of a retirement
	// whose own buckets the standby caches held, until it is added
	// (remainderAfterTakeover).
	later map[string]deferred
}

// deferred is a selection added to a retirement's from a moment on.
type deferred struct {
	sel  labels.Selector
	from time.Time
}

// remainderAfterTakeover is how long after a retirement whose own buckets
// (those this member adopts) the standby caches held its first selection
// waits. That selection is then the remainder, usually empty: the retired
// member's objects without a bucket label, and those it was handing over
// when it died (in buckets of live members). Its watch begins with a pass
// of the API server over every object of the kind, which at 100,000
// objects took it about 0.3 s of CPU per adopter, at the moment the
// adopters start the objects that their standby caches hold. The engine
// asks again every 5 s while it adopts, so the selection comes at the
// first of those asks; the objects in it start that much later.
const remainderAfterTakeover = 4 * time.Second

// claimFirst reports whether this member claims the retired member's
// adopted objects before any work on them, rather than after: when the
// retirement is orphaned (the ring had no live member) and another ring
// has member Leases in this ring's namespace. Another ring judges this
// one gone once none of its members is live, and places its objects (one
// guarded write each); an adopter that worked before writing could work
// on an object that the other ring's member works on too. A claim is a
// guarded write as well, so exactly one of the two lands. Decided once
// per retirement, by one listing of Leases; an error counts as another
// ring about.
func (r *Ownership) claimFirst(e sharding.Epoch, retired string) bool {
	if !e.Orphaned(retired) {
		return false
	}
	a := &r.adopting
	a.mu.Lock()
	defer a.mu.Unlock()
	if decided, ok := a.claimFirst[retired]; ok {
		return decided
	}
	if a.claimFirst == nil {
		a.claimFirst = map[string]bool{}
	}
	another := r.anotherRingAbout()
	a.claimFirst[retired] = another
	if another {
		r.log.Info("The objects of a member retired while this ring had no live member are claimed before any work on them: another ring's members have Leases beside this ring's.",
			"retired", retired)
	}
	return another
}

// anotherRingAbout reports whether another ring's member Leases are in
// this ring's namespace (or whether that cannot be told).
func (r *Ownership) anotherRingAbout() bool {
	if r.leases == nil {
		return true
	}
	sel, err := labels.Parse(ring.RingLabel + "," + ring.RingLabel + "!=" + r.name)
	if err != nil {
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), leaseListTimeout)
	defer cancel()
	var list coordinationv1.LeaseList
	if err := r.leases.List(ctx, &list, client.InNamespace(r.assigner.Namespace), client.MatchingLabelsSelector{Selector: sel}, client.Limit(1)); err != nil {
		r.log.Error(err, "Cannot tell whether another ring is about; the objects of a member retired while this ring had no live member are claimed before any work on them.")
		return true
	}
	return len(list.Items) > 0
}

// leaseListTimeout bounds the listing of another ring's Leases.
const leaseListTimeout = 10 * time.Second

// standbyPause is how long after this member began adopting from a
// retired member it adds no standby cache: listing the buckets that the
// death gave it to stand by for would take the CPU and the API server
// from starting the objects it adopted, at the moment it matters most.
// A second death within it lists what no running standby cache holds.
func (r *Ownership) standbyPause() time.Duration { return 2 * r.assigner.Durations.LeaseDuration }

// standing is one standby cache's selection: its buckets' objects,
// whoever owns them (docs/sharding.md, "Standing by").
type standing struct {
	buckets map[string]bool
	sel     labels.Selector
	// serves are the retired members whose adoption counts on the cache:
	// their objects in its buckets are in no other selection, so it runs
	// until they are gone from the epoch.
	serves map[string]bool
}

// Adopting selects, for every retired member of the published epoch
// among whose adopters this member is, the objects that it may adopt, and
// under ownership.Standby the buckets whose objects it would adopt if
// their owner died now: the engine watches each selection with a cache of
// its own beside the member's share (docs/sharding.md, "Adoption" and
// "Standing by"). The first selection of a retired member names its
// objects but for the buckets adopted elsewhere and those a standby cache
// holds (objects without a bucket label are in it); each later one, the
// buckets this member was given since that no standby cache holds. The
// channel is closed when the epoch changes.
func (r *Ownership) Adopting() (map[string][]labels.Selector, <-chan struct{}) {
	e, changed := r.epoch.now()
	me := r.member.Name()
	a := &r.adopting
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.covered == nil {
		a.covered, a.sels = map[string]map[string]bool{}, map[string][]labels.Selector{}
	}
	held := map[string]bool{} // the buckets that the standby caches select
	for _, s := range a.standby {
		maps.Copy(held, s.buckets)
	}
	out := map[string][]labels.Selector{}
	for _, retired := range e.RetiredNames() {
		if !e.Adopts(retired, me) {
			continue
		}
		adopters := e.Adopters(retired)
		elsewhere := e.AdoptedElsewhere(retired, me)
		mine := map[string]bool{}
		for _, b := range sharding.AllBuckets() {
			mine[b] = true
		}
		for _, b := range elsewhere {
			delete(mine, b)
		}
		covered := a.covered[retired]
		switch {
		case covered == nil:
			a.pausedUntil = r.clock.Now().Add(r.standbyPause())
			a.covered[retired] = mine
			a.serve(retired, mine)
			left := slices.Clone(elsewhere)
			for b := range mine {
				if held[b] {
					left = append(left, b)
				}
			}
			slices.SortFunc(left, byNumber)
			first := r.keys.AdoptedFrom(retired, left)
			if ownHeld(retired, adopters, mine, held) {
				if a.later == nil {
					a.later = map[string]deferred{}
				}
				a.later[retired] = deferred{sel: first, from: r.clock.Now().Add(remainderAfterTakeover)}
				a.sels[retired] = nil
			} else {
				a.sels[retired] = []labels.Selector{first}
			}
		default:
			if d, ok := a.later[retired]; ok && !r.clock.Now().Before(d.from) {
				a.sels[retired] = append([]labels.Selector{d.sel}, a.sels[retired]...)
				delete(a.later, retired)
			}
			gained := map[string]bool{}
			for b := range mine {
				if !covered[b] {
					gained[b] = true
					covered[b] = true
				}
			}
			a.serve(retired, gained)
			var listed []string
			for b := range gained {
				if !held[b] {
					listed = append(listed, b)
				}
			}
			if len(listed) > 0 {
				a.sels[retired] = append(a.sels[retired], r.inBuckets(r.keys.OwnedBy(retired), listed))
			}
		}
		out[retired] = slices.Clone(a.sels[retired])
	}
	for retired := range maps.Keys(a.covered) {
		if _, ok := out[retired]; !ok {
			delete(a.covered, retired)
			delete(a.sels, retired)
			delete(a.later, retired)
		}
	}
	for retired := range maps.Keys(a.claimFirst) {
		if !e.IsRetired(retired) {
			delete(a.claimFirst, retired)
		}
	}
	var standby []string
	if !r.noStandby {
		standby = e.Standby(me)
	}
	a.standBy(r, standby, out, r.clock.Now().Before(a.pausedUntil))
	if len(a.standby) > 0 {
		for _, s := range a.standby {
			out[ownership.Standby] = append(out[ownership.Standby], s.sel)
		}
	}
	return out, changed
}

// ownHeld reports whether the standby caches hold every bucket of the
// retired member's own (those it owned among its adopters and itself)
// that this member adopts: then only the remainder is left to list.
func ownHeld(retired string, adopters []string, mine, held map[string]bool) bool {
	among := append(slices.Clone(adopters), retired)
	for b := range mine {
		if !held[b] && sharding.Owner(b, among) == retired {
			return false
		}
	}
	return true
}

// serve records that the retired member's adoption counts on the standby
// caches holding any of the buckets.
func (a *adopting) serve(retired string, buckets map[string]bool) {
	for _, s := range a.standby {
		for b := range buckets {
			if s.buckets[b] {
				s.serves[retired] = true
				break
			}
		}
	}
}

// standBy keeps the standby caches that serve a retired member of adopting
// or whose buckets are still at least half ones to stand by for, and adds
// one for the buckets to stand by for that none of them holds, unless
// paused: a member that joins or dies changes about 1/N of a member's
// standby buckets, so most of a standby cache stays of use, and one that
// does not is replaced by a smaller listing rather than kept whole.
func (a *adopting) standBy(r *Ownership, buckets []string, adopting map[string][]labels.Selector, paused bool) {
	want := map[string]bool{}
	for _, b := range buckets {
		want[b] = true
	}
	var kept []*standing
	held := map[string]bool{}
	for _, s := range a.standby {
		for retired := range s.serves {
			if _, ok := adopting[retired]; !ok {
				delete(s.serves, retired)
			}
		}
		wanted := 0
		for b := range s.buckets {
			if want[b] {
				wanted++
			}
		}
		if len(s.serves) == 0 && 2*wanted < len(s.buckets) {
			continue
		}
		kept = append(kept, s)
		maps.Copy(held, s.buckets)
	}
	var missing []string
	for _, b := range buckets {
		if !held[b] {
			missing = append(missing, b)
		}
	}
	if len(missing) > 0 && !paused {
		sel := r.inBuckets(labels.Everything(), missing)
		kept = append(kept, &standing{buckets: setOf(missing), sel: sel, serves: map[string]bool{}})
	}
	a.standby = kept
}

// setOf is the set of the strings.
func setOf(values []string) map[string]bool {
	out := make(map[string]bool, len(values))
	for _, v := range values {
		out[v] = true
	}
	return out
}

// byNumber orders buckets by their number, as AllBuckets lists them.
func byNumber(x, y string) int {
	nx, _ := strconv.Atoi(x)
	ny, _ := strconv.Atoi(y)
	return cmp.Compare(nx, ny)
}

// inBuckets narrows the selection to the objects in the buckets.
func (r *Ownership) inBuckets(sel labels.Selector, buckets []string) labels.Selector {
	slices.SortFunc(buckets, byNumber)
	req, err := labels.NewRequirement(r.keys.Bucket, selection.In, buckets)
	if err != nil {
		return sel // the buckets are valid label values: this cannot fail
	}
	return sel.Add(*req)
}

// PutRight is the write that puts back the owner label of an object in
// this member's adoption selection whose label names a retired member,
// whose bucket of it this member adopts, while its grant names another
// member: a hand edit to a member that was cut off or died before it
// could put the label back itself. No adopter works on such an object
// (its label and grant disagree), and the assigner leaves a retired
// member's objects to its adopters, so without this write nobody would
// handle it again. The label goes back to the grant (PutBack). nil for
// any other object.
func (r *Ownership) PutRight(obj client.Object) map[string]any {
	p := r.keys.PlacementOf(obj)
	if p.Owner == "" || p.Owner == p.Granted {
		return nil
	}
	e, _ := r.epoch.now()
	if !e.IsRetired(p.Owner) || e.Adopter(sharding.ObjectKey(obj.GetNamespace(), obj.GetName()), p.Owner) != r.member.Name() {
		return nil
	}
	return r.PutBack(obj)
}

// Rebucket is the write that puts right the bucket label of an object in
// this member's adoption selection that it does not adopt because the
// label names one of this member's buckets while the object's name falls
// into another's: no other adopter selects it, so this one moves it to
// its bucket, where its adopter finds it. nil for any other object: one
// without the label, or with a value that is no bucket, is in every
// adopter's first selection, and its own adopter takes it as it is.
func (r *Ownership) Rebucket(obj metav1.Object) map[string]any {
	p := r.keys.PlacementOf(obj)
	label := ring.Label(obj, r.keys.Bucket)
	right := ring.BucketLabel(obj.GetNamespace(), obj.GetName())
	if p.Owner == "" || p.Owner != p.Granted || label == right || !sharding.ValidBucket(label) || r.adopted(obj) {
		return nil
	}
	e, _ := r.epoch.now()
	if !e.IsRetired(p.Owner) || e.Adopter(label, p.Owner) != r.member.Name() {
		return nil
	}
	return map[string]any{"metadata": map[string]any{
		"resourceVersion": obj.GetResourceVersion(),
		"labels":          map[string]any{r.keys.Bucket: right},
	}}
}
