package engine

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/kopf-go/kopf/internal/lowlevel"
	"github.com/kopf-go/kopf/internal/ownership"
)

// Adoption (docs/sharding.md, "Adoption"): when a ring member dies or
// leaves, its objects keep its name in their owner label, and the live
// members that the ring's epoch names its adopters take them over without
// a write to them. Each adopter watches them with one more cache per
// retired member, beside the run's cache of its own share, and works on
// those that hash to it. It claims each one (its owner label and grant
// moved to itself) before its first write to it, and the others at a slow
// pace (drainPace), so that the retired member's name goes from every
// object and its cache can stop. A claimed object moves from the adoption
// cache to the share's; reads in between find it as it was claimed
// (runReader).

// adoption runs the adoption caches of one run of the engine.
type adoption struct {
	e          *engine
	namespaces []string
	kinds      []*kindState
	ctrls      map[*kindState]controller.Controller

	mu     sync.Mutex
	caches map[adoptKey]*adoptCache
	// adopting tells whether the epoch names a retired member that this
	// replica adopts from: until it does, the standby caches hold nothing
	// to work on, and neither reads nor drains look into them.
	adopting atomic.Bool
	// retired are those members (as run last heard): the drains read
	// only their objects, by the caches' owner index.
	retired atomic.Pointer[[]string]
	// claimsFrom is when the drains may claim again (unix nanoseconds):
	// claimsAfterTakeover after the epoch last gave this replica objects.
	claimsFrom atomic.Int64
}

// adoptKey names an adoption cache: a retired member has one per
// selection of its objects that this replica adopts (one, and one more
// for the buckets each death of another adopter gave this one that no
// standby cache holds); the standby caches have the retired member
// ownership.Standby.
type adoptKey struct{ retired, selector string }

// adoptCache is the cache of one selection of objects to adopt.
type adoptCache struct {
	c    cache.Cache
	stop context.CancelFunc
	done chan struct{} // closed once the cache and its drain have stopped
	// entering and lowLevel are its event handlers by kind: requestAdopted
	// asks the first how long an object's work still waits, and offers
	// the second the objects an epoch made adopted.
	entering map[*kindState]*enteringLater
	lowLevel map[*kindState]*lowlevel.Handler
	// offered are the adopted objects that its handlers were given, by
	// an event or by requestAdopted: a change of the epoch offers the low-
	// level handlers only the others.
	offered sync.Map // types.UID → struct{}
}

// drainPace is the interval between two claims of adopted objects that
// no write claimed first: 50 a second per adopter, so that the claims of a
// dead member's share take a small part of the API server's writes, and
// the objects are worked on meanwhile all the same.
const drainPace = 20 * time.Millisecond

// claimsAfterTakeover is how long the drains wait, after an epoch gave
// this replica objects, before they claim any. Nothing waits for the
// claims (a write of the engine's claims its object first), and each one
// takes a write of the API server and an event to every cache of the
// object, which a takeover's start of tens of thousands of objects needs
// the CPUs for: at 100,000 objects, a survivor starts its part within
// the seconds after the epoch (docs/sharding.md, "Adoption").
const claimsAfterTakeover = 5 * time.Second

// run keeps one cache per retired member that this replica adopts from,
// and the standby caches, until ctx ends, and then stops them all and
// waits for them.
func (a *adoption) run(ctx context.Context) {
	defer a.stopAll()
	var asked <-chan struct{} // the channel of the last answer
	for {
		want, changed := a.e.own.Adopting()
		if changed == nil {
			return // this ownership never adopts
		}
		retired := retiredIn(want)
		a.retired.Store(&retired)
		adopting := len(retired) > 0
		if was := a.adopting.Swap(adopting); was && !adopting {
			for _, r := range a.kinds {
				r.adoptionEnded()
			}
		}
		if adopting && changed != asked {
			a.claimsFrom.Store(time.Now().Add(claimsAfterTakeover).UnixNano())
		}
		a.follow(ctx, want, changed != asked)
		asked = changed
		var again <-chan time.Time
		if adopting {
			// The ownership adds no standby cache for a while after a
			// takeover began: ask again, as a drain looks again.
			again = time.After(drainIdle)
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-again:
		}
	}
}

// follow starts the caches of the selections in want, stops those not in
// it, and, if what Adopts answers may have changed (adopts), has every
// object of the caches that kept going that is this replica's now and
// was not before reconciled (the epoch retired its owner, or gave it
// objects of another adopter that died). Asked again with the same
// answer, as while a takeover's pause lasts, it does not look through
// them again: a pass reads the objects of the retired members in the
// standby caches, tens of thousands at scale, while the takeover's
// objects start. The standby caches start last, after those stopped are
// gone.
func (a *adoption) follow(ctx context.Context, want map[string][]labels.Selector, adopts bool) {
	wanted := map[adoptKey]labels.Selector{}
	for retired, sels := range want {
		for _, sel := range sels {
			wanted[adoptKey{retired: retired, selector: sel.String()}] = sel
		}
	}
	a.mu.Lock()
	var stopping []*adoptCache
	for k, ac := range a.caches {
		if _, ok := wanted[k]; !ok {
			ac.stop()
			stopping = append(stopping, ac)
			delete(a.caches, k)
		}
	}
	kept := slices.Collect(maps.Values(a.caches))
	a.mu.Unlock()
	if adopts {
		retired := retiredIn(want)
		for _, ac := range kept {
			a.requestAdopted(ctx, ac, retired)
		}
	}
	keys := slices.SortedFunc(maps.Keys(wanted), func(x, y adoptKey) int {
		return cmp.Or(cmp.Compare(x.retired, y.retired), cmp.Compare(x.selector, y.selector))
	})
	standby := func(k adoptKey) bool { return k.retired == ownership.Standby }
	for _, k := range keys {
		if !standby(k) {
			a.startCache(ctx, k, wanted[k])
		}
	}
	for _, ac := range stopping {
		<-ac.done
	}
	for _, k := range keys {
		if standby(k) {
			a.startCache(ctx, k, wanted[k])
		}
	}
}

// retiredIn are the retired members of the caches' selections, sorted.
func retiredIn(want map[string][]labels.Selector) []string {
	var retired []string
	for r := range want {
		if r != ownership.Standby {
			retired = append(retired, r)
		}
	}
	slices.Sort(retired)
	return retired
}

// retiredNow are the retired members that this replica adopts from, as
// run last heard.
func (a *adoption) retiredNow() []string {
	if p := a.retired.Load(); p != nil {
		return *p
	}
	return nil
}

// startCache starts the cache of one selection unless it runs already.
func (a *adoption) startCache(ctx context.Context, k adoptKey, sel labels.Selector) {
	a.mu.Lock()
	_, running := a.caches[k]
	a.mu.Unlock()
	if running {
		return
	}
	ac, err := a.start(ctx, k.retired, sel)
	if err != nil {
		a.e.log.Error(err, "The objects of a retired ring member cannot be watched; they are watched when the ring's epoch changes next.",
			"retired", k.retired, "selector", k.selector)
		return
	}
	a.mu.Lock()
	a.caches[k] = ac
	a.mu.Unlock()
}

// start makes and runs the cache of one retired member's objects, with
// the kinds' controllers and low-level handlers on it, and its drain.
func (a *adoption) start(ctx context.Context, retired string, sel labels.Selector) (*adoptCache, error) {
	c, err := a.e.adoptCacheOf(a.namespaces, a.kinds, sel)
	if err != nil {
		return nil, fmt.Errorf("create the cache of the objects of %s: %w", retired, err)
	}
	cctx, stop := context.WithCancel(ctx)
	for _, r := range a.kinds {
		if err := c.IndexField(cctx, r.objects.New(), ownerIndex, a.ownerOf); err != nil {
			stop()
			return nil, fmt.Errorf("index the objects of %s by their owner: %w", retired, err)
		}
	}
	ac := &adoptCache{c: c, stop: stop, done: make(chan struct{}), entering: map[*kindState]*enteringLater{}}
	var wg sync.WaitGroup
	wg.Go(func() { _ = c.Start(cctx) })
	for _, r := range a.kinds {
		entering := &enteringLater{noticingHandler: noticingHandler{memories: r.memories, own: a.e.own}, delay: a.margin(),
			offered: &ac.offered, claimSeen: r.claimSeen}
		ac.entering[r] = entering
		ctrl, ok := a.ctrls[r]
		if !ok {
			continue
		}
		// No predicate: the handler sees every object, to note when one
		// moved, and passes on those this replica adopts.
		kind := source.Kind[client.Object](c, r.objects.New(), entering)
		// The controller starts a source with its own context, which
		// outlives this cache: the source ends with whichever ends first.
		err := ctrl.Watch(source.TypedFunc[reconcile.Request](func(qctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
			sctx, cancel := context.WithCancel(cctx)
			stopWith := context.AfterFunc(qctx, cancel)
			context.AfterFunc(sctx, func() { stopWith() })
			return kind.Start(sctx, q)
		}))
		if err != nil {
			stop()
			wg.Wait()
			return nil, fmt.Errorf("watch the objects of %s: %w", retired, err)
		}
	}
	lowLevel, err := a.e.lowLevelOn(cctx, c, a.kinds, offerToLowLevel(a.e.own, &ac.offered))
	ac.lowLevel = lowLevel
	if err != nil && cctx.Err() == nil {
		a.e.log.Error(err, "The low-level handlers do not see the objects of a retired ring member until they are claimed.", "retired", retired)
	}
	if retired == ownership.Standby {
		a.e.log.Info("Standing by for the objects of other ring members that this member would adopt.", "selection", shortSelection(sel))
	} else {
		a.e.log.Info("Adopting the objects of a retired ring member.", "retired", retired, "selection", shortSelection(sel))
	}
	wg.Go(func() { a.drain(cctx, c, retired) })
	go func() {
		wg.Wait()
		close(ac.done)
	}()
	return ac, nil
}

// margin is the ring's margin, LeaseDuration - RenewDeadline: how long a
// member has to stop its work on an object once it must.
func (a *adoption) margin() time.Duration {
	d := a.e.settings.Sharding.Durations
	return d.LeaseDuration - d.RenewDeadline
}

// enteringLater is the event handler of an adoption cache's source. An
// object in the cache's first listing is worked on at once: the retired
// member whose name it carries stopped by its fence before the ring
// retired it. One that enters the cache later, or whose labels a write
// moved, does so because of a write to its owner label: a handover to a
// member that died meanwhile, or a claim of that member's that arrived
// late (held in a proxy, say). If it was a claim, another adopter may be
// working on the object, under the name it carried before; that adopter
// stops once the label moves (the object leaves its cache), within the
// ring's margin, so this one starts only after the margin. A standby
// cache notes such moves before anyone retires, so that an object that
// moved just before its owner's retirement waits as long.
type enteringLater struct {
	noticingHandler
	delay time.Duration
	// entered holds when each object that entered late or moved did,
	// until its delay is over: its work meanwhile waits as long.
	entered sync.Map // types.UID → time.Time
	offered *sync.Map
	// claimSeen forgets, for leftCache, the claim of an object that this
	// cache shows no longer adopted: a standby cache keeps a claimed
	// object (its bucket stays), so no DELETED event of its ever consumes
	// the claim.
	claimSeen func(types.UID)
}

// enter notes that the object entered or moved now.
func (h *enteringLater) enter(obj client.Object) {
	uid, at := obj.GetUID(), time.Now()
	h.entered.Store(uid, at)
	time.AfterFunc(h.delay, func() { h.entered.CompareAndDelete(uid, at) })
}

// wait is how much longer the object's work waits: the rest of the margin
// since it entered; 0 if it did not lately.
func (h *enteringLater) wait(uid types.UID) time.Duration {
	at, ok := h.entered.Load(uid)
	if !ok {
		return 0
	}
	return max(0, h.delay-time.Since(at.(time.Time)))
}

// adopts reports whether the object is one to work on, and notes that it
// was offered.
func (h *enteringLater) adopts(obj client.Object) bool { return offerIfAdopted(h.own, h.offered, obj) }

// offerIfAdopted reports whether the replica adopts the object, and
// notes it among the cache's objects offered to its handlers if so, and
// not among them if not: an object that a claim moved to a live member
// is offered again if that member retires later, which requestAdopted,
// reading only the retired members' objects, would not see otherwise.
func offerIfAdopted(own ownership.Ownership, offered *sync.Map, obj client.Object) bool {
	if obj == nil {
		return false
	}
	if !own.Adopts(obj) {
		offered.Delete(obj.GetUID())
		return false
	}
	offered.Store(obj.GetUID(), struct{}{})
	return true
}

// offerToLowLevel is the low-level handlers' filter of an adoption
// cache's objects: those this replica adopts (offerIfAdopted), but for
// those it claims first, which they hear of once the claim has landed,
// from the share's cache; another ring's write may land instead, and the
// object never be this replica's.
func offerToLowLevel(own ownership.Ownership, offered *sync.Map) func(client.Object) bool {
	return func(obj client.Object) bool {
		return offerIfAdopted(own, offered, obj) && !own.ClaimsFirst(obj)
	}
}

func (h *enteringLater) Create(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	if e.Object == nil {
		return
	}
	// One in the first listing waits as well if it was written since its
	// owner's retirement: the write may be a late one of a retired member
	// that moved it from another adopter (a claim held in a proxy).
	if h.delay > 0 && (!e.IsInInitialList || h.own.ChangedSinceRetirement(e.Object)) {
		h.enter(e.Object)
	}
	if !h.adopts(e.Object) {
		return
	}
	wait := h.wait(e.Object.GetUID())
	if wait <= 0 {
		h.noticingHandler.Create(ctx, e, q)
		return
	}
	key := types.NamespacedName{Namespace: e.Object.GetNamespace(), Name: e.Object.GetName()}
	h.memories.Notice(e.Object.GetUID(), key, h.own.FoundAtStart(false))
	h.own.Entered(e.Object)
	q.AddAfter(reconcile.Request{NamespacedName: key}, wait)
}

func (h *enteringLater) Update(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	if e.ObjectNew == nil {
		return
	}
	// A change of labels moved the object unless it stays adopted: one
	// that became adopted by it entered, and one of a live member moved
	// between members, which this one may adopt soon.
	if h.delay > 0 && e.ObjectOld != nil && !maps.Equal(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels()) &&
		!(h.own.Adopts(e.ObjectOld) && h.own.Adopts(e.ObjectNew)) {
		h.enter(e.ObjectNew)
	}
	if !h.adopts(e.ObjectNew) {
		if h.claimSeen != nil {
			h.claimSeen(e.ObjectNew.GetUID())
		}
		return
	}
	if wait := h.wait(e.ObjectNew.GetUID()); wait > 0 {
		q.AddAfter(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(e.ObjectNew)}, wait)
		return
	}
	h.noticingHandler.Update(ctx, e, q)
}

func (h *enteringLater) Delete(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	if h.adopts(e.Object) {
		h.noticingHandler.Delete(ctx, e, q)
	}
}

func (h *enteringLater) Generic(ctx context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	if h.adopts(e.Object) {
		h.noticingHandler.Generic(ctx, e, q)
	}
}

// ownerIndex indexes an adoption cache's objects by the member that
// their owner label names (ownership.OwnerOf).
const ownerIndex = "kopf.dev/ring-owner"

// ownerOf is the index function of ownerIndex.
func (a *adoption) ownerOf(obj client.Object) []string {
	if owner := a.e.own.OwnerOf(obj); owner != "" {
		return []string{owner}
	}
	return nil
}

// requestAdopted asks for a reconcile of every object of the cache that
// this replica adopts now and that its handlers were not given yet, and
// offers it to the low-level handlers as listed: a change of the epoch,
// not an event, made it adopted (a standby cache's, once its owner
// retired). One that moved lately waits out the margin. It reads only
// the objects of the retired members that the replica adopts from (by
// ownerIndex): an object of a live member is adopted by none, and its
// events keep it out of those offered (offerIfAdopted).
func (a *adoption) requestAdopted(ctx context.Context, ac *adoptCache, retired []string) {
	for _, r := range a.kinds {
		for _, obj := range a.listOwnedBy(ctx, ac.c, r, retired) {
			uid, key := obj.GetUID(), client.ObjectKeyFromObject(obj)
			// Whether the replica remembers the object says nothing: it
			// may remember an object it handed over long ago.
			if !a.e.own.Adopts(obj) {
				ac.offered.Delete(uid)
				continue
			}
			// An object given before was queued by its event, and the
			// epoch's change does not change what its reconcile does.
			if _, given := ac.offered.LoadOrStore(uid, struct{}{}); given {
				continue
			}
			r.memories.Notice(uid, key, a.e.own.FoundAtStart(true))
			a.e.own.Entered(obj)
			if h := ac.lowLevel[r]; h != nil {
				h.OnAdd(obj, true)
			}
			if _, ok := a.ctrls[r]; !ok {
				continue
			}
			if wait := ac.entering[r].wait(uid); wait > 0 {
				requestAfter(ctx, r, key, wait)
				continue
			}
			if !r.request(ctx, key) {
				return
			}
		}
	}
}

// requestAfter asks for the object's reconcile after the wait, unless ctx
// ends first.
func requestAfter(ctx context.Context, r *kindState, key types.NamespacedName, wait time.Duration) {
	unregister := make(chan func() bool, 1)
	t := time.AfterFunc(wait, func() {
		(<-unregister)()
		r.request(ctx, key)
	})
	unregister <- context.AfterFunc(ctx, func() { t.Stop() })
}

// drain claims, at drainPace, every object of the cache that this
// replica adopts, until none is left or ctx ends: the claim moves it to
// the share's cache, and once no object carries the retired member's
// name, the assigner drops it from the epoch and this cache stops.
func (a *adoption) drain(ctx context.Context, c cache.Cache, retired string) {
	began := time.Now()
	if !c.WaitForCacheSync(ctx) {
		return
	}
	listed := 0
	for _, r := range a.kinds {
		listed += len(a.list(ctx, c, r))
	}
	took := time.Since(began).Round(time.Millisecond).String()
	if retired == ownership.Standby {
		a.e.log.Info("Listed the objects of other ring members that this member stands by for.", "objects", listed, "took", took)
	} else {
		a.e.log.Info("Listed the objects of a retired ring member.", "retired", retired, "objects", listed, "took", took)
	}
	if a.e.own.ClaimAdopted() == nil {
		return
	}
	// A ticker, not a pause after each claim: the claims' own latency
	// does not slow them below the pace.
	pace := time.NewTicker(drainPace)
	defer pace.Stop()
	claimed := 0
	for ctx.Err() == nil {
		if !a.adopting.Load() {
			// A standby cache's objects are other members' until one
			// retires; nothing in any cache is to claim.
			select {
			case <-ctx.Done():
				return
			case <-time.After(drainIdle):
			}
			continue
		}
		left := 0
		// Only a retired member's objects are claimed or rebucketed: the
		// owner index reads them alone, not a standby cache's share of
		// live members' objects, every drainIdle while this replica
		// adopts.
		retiredNow := a.retiredNow()
		for _, r := range a.kinds {
			claim := r.claim()
			for _, obj := range a.listOwnedBy(ctx, c, r, retiredNow) {
				act := a.drainAction(r, obj)
				if act == drainNothing {
					continue
				}
				left++
				if !a.claimsWait(ctx) {
					return
				}
				select {
				case <-ctx.Done():
					return
				case <-pace.C:
				}
				// The cache's object as it is now, not as it was listed:
				// the write's version must be the latest seen. (The
				// listed one is the cache's own, not to be written to.)
				key := client.ObjectKeyFromObject(obj)
				obj = r.objects.New()
				if err := c.Get(ctx, key, obj); err != nil {
					continue
				}
				var body map[string]any
				switch act {
				case drainRebucket:
					// Another adopter's object, whose bucket label hides it
					// from that adopter: it goes to its bucket, and this
					// cache no longer holds it.
					body = a.e.own.Rebucket(obj)
				case drainPutRight:
					// An owner label edited by hand to the retired member:
					// it goes back to the grant.
					body = a.e.own.PutRight(obj)
				case drainClaim:
					body = claim(obj)
				}
				if body == nil {
					continue
				}
				if err := r.writer.Acknowledge(ctx, obj, body); err != nil {
					r.forgetClaim(obj.GetUID())
					if ctx.Err() == nil && !apierrors.IsConflict(err) {
						a.e.log.V(1).Info("An adopted object could not be claimed; it is tried again.", "retired", retired,
							"object", client.ObjectKeyFromObject(obj).String(), "error", err.Error())
					}
				} else if act == drainClaim {
					claimed++
				}
			}
		}
		if left == 0 {
			if claimed > 0 {
				a.e.log.Info("Claimed the adopted objects of a retired ring member.", "retired", retired, "claimed", claimed)
			}
			claimed = 0
			select {
			case <-ctx.Done():
				return
			case <-time.After(drainIdle):
			}
		}
	}
}

// claimsWait waits until the drains may claim (claimsFrom); false if ctx
// ended first.
func (a *adoption) claimsWait(ctx context.Context) bool {
	for {
		wait := time.Until(time.Unix(0, a.claimsFrom.Load()))
		if wait <= 0 {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(wait):
		}
	}
}

// drainAct is what the drain does with one object of an adoption cache.
type drainAct int

const (
	drainNothing  drainAct = iota
	drainClaim             // it is this replica's: claim it
	drainRebucket          // its bucket label hides it from its adopter
	drainPutRight          // its owner label was edited by hand to the retired member
)

// drainAction tells what the drain does with the object.
func (a *adoption) drainAction(r *kindState, obj client.Object) drainAct {
	if a.e.own.Rebucket(obj) != nil {
		return drainRebucket
	}
	if a.e.own.PutRight(obj) != nil {
		return drainPutRight
	}
	if r.claimSent(obj) || !a.e.own.Adopts(obj) || obj.GetDeletionTimestamp() != nil {
		return drainNothing // a write of the engine's claims it, another adopter's, or a deletion that needs no claim
	}
	return drainClaim
}

// shortSelection describes a selection for a log line: a requirement's
// long list of values (buckets) is told by its count.
func shortSelection(sel labels.Selector) string {
	reqs, _ := sel.Requirements()
	parts := make([]string, 0, len(reqs))
	for _, req := range reqs {
		if values := req.Values(); values.Len() > 8 {
			parts = append(parts, fmt.Sprintf("%s %s (%d values)", req.Key(), req.Operator(), values.Len()))
			continue
		}
		parts = append(parts, req.String())
	}
	return strings.Join(parts, ",")
}

// drainIdle is how long a drain with nothing left to claim waits before
// it looks again: objects handed to this adopter by the epoch's next
// change, or whose claim conflicted.
const drainIdle = 5 * time.Second

// list is the kind's objects in the cache (none if it cannot list them):
// the cache's own, not copies, since a standby cache holds a share of
// objects and is listed at every change of the epoch. They are only to
// be read.
func (a *adoption) list(ctx context.Context, c cache.Cache, r *kindState) []client.Object {
	list, err := newList(r, a.e.mgr.GetScheme())
	if err != nil {
		return nil
	}
	if err := c.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	var out []client.Object
	_ = meta.EachListItem(list, func(o runtime.Object) error {
		if obj, ok := o.(client.Object); ok {
			out = append(out, obj)
		}
		return nil
	})
	return out
}

// listOwnedBy are the kind's objects in the cache whose owner label names
// one of the members (none if it cannot list them), read by ownerIndex:
// the cache's own, as list's.
func (a *adoption) listOwnedBy(ctx context.Context, c cache.Cache, r *kindState, owners []string) []client.Object {
	var out []client.Object
	for _, owner := range owners {
		list, err := newList(r, a.e.mgr.GetScheme())
		if err != nil {
			return nil
		}
		if err := c.List(ctx, list, client.MatchingFields{ownerIndex: owner}, client.UnsafeDisableDeepCopy); err != nil {
			a.e.log.Error(err, "The objects of a retired ring member cannot be read from an adoption cache; they are read at the epoch's next change.",
				"retired", owner)
			continue
		}
		_ = meta.EachListItem(list, func(o runtime.Object) error {
			if obj, ok := o.(client.Object); ok {
				out = append(out, obj)
			}
			return nil
		})
	}
	return out
}

// current are the running adoption caches.
func (a *adoption) current() []cache.Cache {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]cache.Cache, 0, len(a.caches))
	for _, ac := range a.caches {
		out = append(out, ac.c)
	}
	return out
}

// stopAll stops every adoption cache and waits for them.
func (a *adoption) stopAll() {
	a.mu.Lock()
	caches := a.caches
	a.caches = map[adoptKey]*adoptCache{}
	a.mu.Unlock()
	for _, ac := range caches {
		ac.stop()
	}
	for _, ac := range caches {
		<-ac.done
	}
}
