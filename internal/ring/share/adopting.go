package share

import (
	"maps"
	"slices"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/kopf-go/kopf/internal/ring"
	"github.com/kopf-go/kopf/internal/sharding"
)

// adopting remembers, for each retired member whose objects this member
// adopts, the buckets its adoption caches select already. A member's
// buckets of a retired member only grow while it adopts from it (an
// adopter's death gives its buckets to the others; a join gives nothing),
// so a new bucket gets a cache of its own beside those running, and no
// running cache is ever stopped and listed again.
type adopting struct {
	mu      sync.Mutex
	covered map[string]map[string]bool   // by retired member: bucket → selected
	sels    map[string][]labels.Selector // by retired member, in the order made
}

// Adopting selects, for every retired member of the published epoch
// among whose adopters this member is, the objects that it may adopt:
// the engine watches each selection with a cache of its own beside the
// member's share (docs/sharding.md, "Adoption"). The first selection of
// a retired member names its objects but for the buckets adopted
// elsewhere (objects without a bucket label are in it); each later one,
// the buckets this member was given since. The channel is closed when
// the epoch changes.
func (r *Ownership) Adopting() (map[string][]labels.Selector, <-chan struct{}) {
	e, changed := r.epoch.now()
	me := r.member.Name()
	a := &r.adopting
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.covered == nil {
		a.covered, a.sels = map[string]map[string]bool{}, map[string][]labels.Selector{}
	}
	out := map[string][]labels.Selector{}
	for _, retired := range e.RetiredNames() {
		adopters := e.Adopters(retired)
		if !slices.Contains(adopters, me) {
			continue
		}
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
			a.covered[retired] = mine
			a.sels[retired] = []labels.Selector{r.keys.AdoptedFrom(retired, elsewhere)}
		default:
			var gained []string
			for b := range mine {
				if !covered[b] {
					gained = append(gained, b)
					covered[b] = true
				}
			}
			if len(gained) > 0 {
				a.sels[retired] = append(a.sels[retired], r.inBuckets(retired, gained))
			}
		}
		out[retired] = slices.Clone(a.sels[retired])
	}
	for retired := range maps.Keys(a.covered) {
		if _, ok := out[retired]; !ok {
			delete(a.covered, retired)
			delete(a.sels, retired)
		}
	}
	return out, changed
}

// inBuckets selects the retired member's objects in the buckets.
func (r *Ownership) inBuckets(retired string, buckets []string) labels.Selector {
	slices.Sort(buckets)
	req, err := labels.NewRequirement(r.keys.Bucket, selection.In, buckets)
	if err != nil {
		return r.keys.OwnedBy(retired) // the buckets are valid label values: this cannot fail
	}
	return r.keys.OwnedBy(retired).Add(*req)
}

// Rebucket is the write that puts right the bucket label of an object in
// this member's adoption selection that it does not adopt because the
// label names one of this member's buckets while the object's name falls
// into another's: no other adopter selects it, so this one moves it to
// its bucket, where its adopter finds it. nil for any other object: one
// without the label, or with a value that is no bucket, is in every
// adopter's first selection, and its own adopter takes it as it is.
func (r *Ownership) Rebucket(obj metav1.Object) map[string]any {
	p := r.keys.Placement(obj.GetLabels(), obj.GetAnnotations())
	label := obj.GetLabels()[r.keys.Bucket]
	right := ring.BucketLabel(obj.GetNamespace(), obj.GetName())
	if p.Owner == "" || p.Owner != p.Granted || label == right || !sharding.ValidBucket(label) || r.adopted(obj) {
		return nil
	}
	e, _ := r.epoch.now()
	if !e.IsRetired(p.Owner) || sharding.Owner(label, e.Adopters(p.Owner)) != r.member.Name() {
		return nil
	}
	return map[string]any{"metadata": map[string]any{
		"resourceVersion": obj.GetResourceVersion(),
		"labels":          map[string]any{r.keys.Bucket: right},
	}}
}
