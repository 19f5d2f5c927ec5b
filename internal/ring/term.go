package ring

import (
	"context"
	"slices"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/metadata"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/kopf-go/kopf/internal/jitter"
	"github.com/kopf-go/kopf/internal/sharding"
)

// term is one stretch of this replica's leadership: a queue of its own
// and the objects seen but not yet placed. The members' liveness is the
// follower's, which outlives terms.
type term struct {
	a *Assigner
	f *follower
	// kinds are the kinds' metadata clients, byKind the same for writes.
	kinds  []kindClient
	byKind []metadata.Getter
	queue  workqueue.TypedRateLimitingInterface[key]
	tally  tally

	// placing is held (read) by each worker from its look at the members
	// to the end of its write, and (write) by a publication of the
	// epoch: so a placement decided among members that included one
	// lands before the epoch that retires it, and every object that
	// carries a retired member's name carried it when it was retired
	// (its adopters take it; the check that drops the member sees it).
	placing sync.RWMutex

	mu          sync.Mutex
	members     []string // the live members, as last computed
	stopping    []string // those of them that stop: nothing new goes to them
	silent      []string // those of them listed silent on the epoch
	round       int      // counts the changes of members and of the epoch
	unpublished bool     // the last publication of the members failed
	// epoch is the ring's epoch as last published (or read at the term's
	// start): the sweep leaves out its members' and its retired members'
	// objects, and the workers do not move what its retired ones hold.
	epoch sharding.Epoch
	// gone are retired members whose names no object carries any more,
	// to be dropped from the next epoch.
	gone []string
	// doubting: the follower was in doubt about members it never saw
	// when the objects were last placed; its end places them again, and
	// relist tells the sweep so (it lists again at once).
	doubting, relist bool
	// swept is poked at every change of members: the sweep lists the
	// objects without a live owner again.
	swept chan struct{}

	// pending holds the latest sighting of every queued object: what the
	// assigner keeps of an object is only what it has still to place.
	pendingMu sync.Mutex
	pending   map[key]seen
}

// assign runs one term until ctx ends: it waits for the follower,
// publishes the members, sweeps the objects without a live owner, and
// places them whenever they or the members change. It returns once its
// goroutines have.
func (a *Assigner) assign(ctx context.Context, f *follower) error {
	t, err := a.newTerm(f)
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer t.queue.ShutDown()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if !toolscache.WaitForCacheSync(ctx.Done(), f.synced) {
		return nil // ctx ended
	}
	// The epoch that the term's predecessor published: its members that
	// are not live now are retired by the first count, and their objects
	// adopted, not moved.
	for {
		e, _, err := readEpoch(ctx, a.leases.Leases(a.s.Namespace), a.s.Ring)
		if err == nil {
			t.epoch = e
			break
		}
		a.s.Logger.Error(err, "The ring's epoch cannot be read; the assigner places nothing until it is, and tries again after a renew period.")
		select {
		case <-ctx.Done():
			return nil
		case <-a.s.Clock.After(a.s.RenewPeriod):
		}
	}
	// The members first: what the sweep finds is placed among them.
	predecessors := t.epoch
	t.recount(ctx)
	wait := t.firstSweepAfter(predecessors)
	wg.Go(func() {
		if wait > 0 {
			select {
			case <-ctx.Done():
				return
			case <-a.s.Clock.After(wait):
			}
		}
		t.sweep(ctx)
	})
	wg.Go(func() { t.dropGone(ctx) })
	for range a.s.Workers {
		wg.Go(func() { t.work(ctx) })
	}
	t.follow(ctx)
	return nil
}

// firstSweepAfter is how long the term's first sweep waits, given the
// epoch its predecessor published: sweepAfterTakeover if the term's first
// count retired members (the assigner that died, as a rule), whose
// adopters start their objects now (the sweep's first listing is a pass
// of the API server over every object of each kind); else nothing.
func (t *term) firstSweepAfter(predecessors sharding.Epoch) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(newlyRetired(predecessors, t.epoch)) > 0 {
		return sweepAfterTakeover
	}
	return 0
}

// sweepAfterTakeover is how long a new assigner whose first count
// retired members waits before its sweep lists the objects without a
// live owner: the objects created meanwhile wait as long to be placed
// (those placed at admission do not), and the retired members' adopters
// have the API server's CPU for their start, as the claims after a
// takeover wait for it (internal/engine, claimsAfterTakeover).
const sweepAfterTakeover = 5 * time.Second

// sweep watches, in every source of the served namespaces, the objects
// whose owner label names no member of the epoch, live or retired
// (sharding.md, "The assigner"),
// and passes each one on to be placed. In steady state these are only the
// objects just created: the assigner reads nothing of the objects that
// live members hold, whatever their number or their rate of change. At
// every change of the names it leaves out (a join, a retired member
// dropped from the epoch), or of the served namespaces, the watches begin
// again with the new selector, and their first listing is what the
// change leaves without a live owner, found by the API server; a
// retirement changes no name the selector leaves out, and its listing
// comes later (nextListing).
func (t *term) sweep(ctx context.Context) {
	for ctx.Err() == nil {
		t.mu.Lock()
		members, round := slices.Concat(t.epoch.Members, t.epoch.RetiredNames()), t.round
		t.relist = false
		t.mu.Unlock()
		names, all, changed := t.a.served()
		selector, err := t.a.keys.Unowned(members)
		if err != nil {
			t.a.s.Logger.Error(err, "The objects without a live owner cannot be selected; the ring places nothing until its members change.",
				"members", members)
			select {
			case <-ctx.Done():
			case <-t.swept:
			}
			continue
		}
		sources := sourcesIn(t.kinds, names, all)
		if s, ok := t.tally.open(round, len(sources)); ok {
			t.report(s)
		}
		wctx, stop := context.WithCancel(ctx)
		var watching sync.WaitGroup
		for _, src := range sources {
			r := src.reflector(selector.String(), t.offer, func(keys []key) {
				if s, ok := t.tally.list(round, src.id, keys); ok {
					t.report(s)
				}
			})
			watching.Go(func() { r.RunWithContext(wctx) })
		}
		// A poke for the round these watches already select (the term's
		// first count pokes before the sweep begins) lists nothing anew:
		// at a new assigner's start that listing is the predecessor's
		// whole share. A new round whose selector is the same lists again
		// only sweepAfterTakeover later: a member's retirement moves its
		// name from the epoch's members to its retired ones, and each
		// listing begins with a pass of the API server over every object
		// of its kind, at the moment the adopters start the retired
		// member's objects. What the round left unplaced waits as long.
		var later <-chan time.Time
		for current := true; current; {
			select {
			case <-ctx.Done():
				current = false
			case <-changed: // a nil channel: never
				current = false
			case <-later:
				current = false
			case <-t.swept:
				switch t.nextListing(round, selector.String()) {
				case listNow:
					current = false
				case listLater:
					if later == nil {
						later = t.a.s.Clock.After(sweepAfterTakeover)
					}
				}
			}
		}
		stop()
		watching.Wait()
	}
}

// listing is what a poke of the sweep asks of its watches.
type listing int

const (
	// listedAlready: the watches select for the current round.
	listedAlready listing = iota
	// listNow: the round's selector is another, or a doubt about unseen
	// members ended (the objects it left unplaced are placed now).
	listNow
	// listLater: the round's selector is the same (a retirement); the
	// watches go on, and list again sweepAfterTakeover later.
	listLater
)

// nextListing tells what the current round asks of the sweep's watches,
// which select with selector for the given round.
func (t *term) nextListing(round int, selector string) listing {
	t.mu.Lock()
	current, relist := t.round, t.relist
	members := slices.Concat(t.epoch.Members, t.epoch.RetiredNames())
	t.mu.Unlock()
	if current == round {
		return listedAlready
	}
	if relist {
		return listNow
	}
	if next, err := t.a.keys.Unowned(members); err != nil || next.String() != selector {
		return listNow
	}
	return listLater
}

// newTerm makes a term's clients and queue.
func (a *Assigner) newTerm(f *follower) (*term, error) {
	kinds, err := a.kindClients()
	if err != nil {
		return nil, err
	}
	byKind := make([]metadata.Getter, len(kinds))
	for i, k := range kinds {
		byKind[i] = k.res
	}
	return &term{a: a, f: f, kinds: kinds, byKind: byKind, pending: map[key]seen{}, swept: make(chan struct{}, 1),
		queue: workqueue.NewTypedRateLimitingQueue(placementRateLimiter())}, nil
}

// placementRateLimiter is client-go's default rate limiter of a queue
// (per object, 5 ms doubling up to 1000 s; overall, 10 a second), with
// jitter: the placements that one outage of the API server failed are
// not all retried at the same moments after it.
func placementRateLimiter() workqueue.TypedRateLimiter[key] {
	return jitter.Limiter(workqueue.DefaultTypedControllerRateLimiter[key](), jitter.Default())
}

// offer queues an object to be placed, as it is now.
func (t *term) offer(k key, o *metav1.PartialObjectMetadata) { t.offerSeen(k, seenOf(t.a.keys, o)) }

// offerSeen queues an object to be placed, as it was seen.
func (t *term) offerSeen(k key, s seen) {
	t.pendingMu.Lock()
	t.pending[k] = s
	t.pendingMu.Unlock()
	t.queue.Add(k)
}

// take removes and returns the latest sighting of a queued object; false
// if a placement before this one took it already.
func (t *term) take(k key) (seen, bool) {
	t.pendingMu.Lock()
	defer t.pendingMu.Unlock()
	s, ok := t.pending[k]
	delete(t.pending, k)
	return s, ok
}

// putBack returns a sighting whose placement failed, unless a newer one
// has come meanwhile.
func (t *term) putBack(k key, s seen) {
	t.pendingMu.Lock()
	defer t.pendingMu.Unlock()
	if _, newer := t.pending[k]; !newer {
		t.pending[k] = s
	}
}

// follow recomputes the live members at every Lease event, whenever
// a member's Lease would expire, and every half renew period (the silent
// ones), until ctx ends. What failed (a member's
// death could not be confirmed, the objects could not be listed) is
// tried again after a renew period.
func (t *term) follow(ctx context.Context) {
	// Silences come without an event: looked for every half renew period.
	silences := t.a.s.Clock.NewTicker(t.a.s.RenewPeriod / 2)
	defer silences.Stop()
	for {
		again := t.recount(ctx)
		var expiry <-chan time.Time
		var timer clock.Timer
		now := t.a.s.Clock.Now()
		next, ok := t.f.live.NextExpiry(now)
		if retry := now.Add(t.a.s.RenewPeriod); again && (!ok || retry.Before(next)) {
			next, ok = retry, true
		}
		if ok {
			timer = t.a.s.Clock.NewTimer(next.Sub(now))
			expiry = timer.C()
		}
		select {
		case <-ctx.Done():
		case <-t.f.changed:
		case <-expiry:
		case <-silences.C():
		}
		if timer != nil {
			timer.Stop()
		}
		if ctx.Err() != nil {
			return
		}
	}
}

// recount takes the live members and, if they changed (or at the term's
// start), publishes them on the ring's epoch Lease and lists the objects
// without a live owner again. Members seen expired are confirmed dead
// first; those that could not be count as live meanwhile. True if it must
// look again: a confirmation or the publication failed.
func (t *term) recount(ctx context.Context) (again bool) {
	now := t.a.s.Clock.Now()
	leases := t.a.leases.Leases(t.a.s.Namespace)
	dead, pending, err := confirmDead(ctx, leases, t.a.s.Ring, t.f.live, now)
	if err != nil && ctx.Err() == nil {
		t.a.s.Logger.Error(err, "Members whose Leases expired could not be confirmed dead; they count as live until they are.",
			"members", pending)
	}
	if len(dead) > 0 {
		t.a.s.Logger.Info("Members stopped renewing their Leases; they count as dead, and their Leases are deleted.", "dead", dead)
	}
	if err := deleteReleased(ctx, leases, t.a.s.Ring, t.f.staleReleases(now)); err != nil && ctx.Err() == nil {
		t.a.s.Logger.V(1).Info("Released Leases could not be deleted; they are tried again later.", "error", err.Error())
	}
	live := append(t.f.live.Live(now), pending...)
	slices.Sort(live)
	live = slices.Compact(live)
	// A retired member is dead for good, however a stale view of its
	// Lease counts it (a new assigner's that never saw it deleted): it
	// is neither placed on nor made a member again (Epoch.Next).
	t.mu.Lock()
	live = slices.DeleteFunc(live, t.epoch.IsRetired)
	t.mu.Unlock()
	doubting := t.f.live.Doubting(now)
	held, unsure := t.held(ctx, live, now)
	stopping := t.f.stoppingAmong(live)
	silent := t.f.silentAmong(live, now)
	t.mu.Lock()
	unaware := t.f.unawareAmong(slices.Concat(live, held))
	next, same := t.epoch.Next(slices.Concat(live, held), stopping, t.gone, unaware)
	// A candidate while it leads, whoever is oldest; written even if the
	// epoch is the same (publish compares the annotations).
	next.Assigner = t.a.member()
	// A late write of a member retired now may have landed within the
	// margin before: its adopters wait out the margin on what was
	// written since.
	next.RecordWrittenBefore(t.epoch, t.f.versions.before(now.Add(-(t.a.s.LeaseDuration - t.a.s.RenewDeadline))))
	changed := t.round == 0 || !slices.Equal(live, t.members) || !slices.Equal(stopping, t.stopping) || doubting != t.doubting
	if !changed && same && !t.unpublished && slices.Equal(silent, t.silent) {
		t.mu.Unlock()
		return len(pending) > 0 || unsure
	}
	if doubting != t.doubting {
		t.relist = true
	}
	t.members, t.stopping, t.doubting = live, stopping, doubting
	if changed {
		t.round++
	}
	t.mu.Unlock()

	if changed {
		t.a.s.Logger.Info("The ring's members changed.", "live", live)
		if t.a.s.OnMembers != nil {
			t.a.s.OnMembers(live)
		}
	}
	if retired := newlyRetired(t.epoch, next); len(retired) > 0 {
		t.a.s.Logger.Info("Members are retired: their objects are adopted by the live members that had joined by then, without a write to them.",
			"retired", retired, "epoch", next.Serial)
	}
	// Published before the sweep places anything with them, so that the
	// members hand over to where the assigner places, and adopt what the
	// sweep leaves out.
	// The placements in flight land first (placing).
	t.placing.Lock()
	err = publish(ctx, leases, t.a.s.Ring, t.a.s.Identity, next, silent)
	if err != nil && ctx.Err() == nil {
		t.a.s.Logger.Error(err, "The ring's epoch could not be published; the members do not hand over to the new ones nor adopt the retired ones' objects until it is, and it is tried again after a renew period.")
	}
	t.mu.Lock()
	t.unpublished = err != nil
	if err == nil {
		t.silent = silent
	}
	if err == nil && !same {
		t.epoch = next
		t.gone = nil
		t.round++
		changed = true
	}
	t.mu.Unlock()
	t.placing.Unlock()
	if changed {
		select {
		case t.swept <- struct{}{}:
		default:
		}
	}
	return len(pending) > 0 || unsure || err != nil
}

// held are the epoch's members that are not live but may still be
// working, so are not retired yet: a new assigner is in doubt about them
// (it never saw their Leases), or its watch of the Leases may be the one
// that is stuck (the API server is asked). True if asking failed: it is
// asked again.
func (t *term) held(ctx context.Context, live []string, now time.Time) (held []string, unsure bool) {
	t.mu.Lock()
	published := t.epoch.Members
	t.mu.Unlock()
	for _, m := range published {
		switch {
		case slices.Contains(live, m):
		case t.f.live.Doubtful(m, now):
			held = append(held, m)
		case t.f.live.Unseen(m):
			alive, err := t.f.askUnseen(ctx, m)
			if err != nil {
				unsure = true
				if ctx.Err() == nil {
					t.a.s.Logger.Error(err, "A member of the ring's epoch cannot be confirmed dead; it is not retired until it is.", "member", m)
				}
			}
			if err != nil || alive {
				held = append(held, m)
			}
		}
	}
	return held, unsure
}

// newlyRetired are the members that next retires and prev did not.
func newlyRetired(prev, next sharding.Epoch) []string {
	var out []string
	for _, m := range next.RetiredNames() {
		if prev.Retired[m] != next.Retired[m] {
			out = append(out, m)
		}
	}
	return out
}

// dropGone looks, every few renew periods while members are retired,
// whether any object still carries a retired member's name; those that
// none does are dropped from the next epoch, and their adopters stop
// watching for them.
func (t *term) dropGone(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.a.s.Clock.After(goneCheckInterval):
		}
		t.mu.Lock()
		retired := t.epoch.RetiredNames()
		t.mu.Unlock()
		var gone []string
		for _, r := range retired {
			empty, err := t.carriesNone(ctx, r)
			if err != nil {
				if ctx.Err() == nil {
					t.a.s.Logger.V(1).Info("Whether objects still carry a retired member's name could not be read; it is read again later.",
						"member", r, "error", err.Error())
				}
				continue
			}
			if empty {
				gone = append(gone, r)
			}
		}
		if len(gone) == 0 {
			continue
		}
		t.mu.Lock()
		t.gone = gone
		t.mu.Unlock()
		t.f.poke()
	}
}

// goneCheckInterval is how often the assigner looks for objects that
// still carry retired members' names: one listing of at most one object
// per retired member and source.
const goneCheckInterval = 10 * time.Second

// carriesNone reports whether no object of any source carries the
// member's name in its owner label.
func (t *term) carriesNone(ctx context.Context, member string) (bool, error) {
	names, all, _ := t.a.served()
	selector := t.a.keys.OwnedBy(member).String()
	for _, src := range sourcesIn(t.kinds, names, all) {
		list, err := src.res.List(ctx, metav1.ListOptions{LabelSelector: selector, Limit: 1})
		if err != nil {
			return false, err
		}
		if len(list.Items) > 0 {
			return false, nil
		}
	}
	return true, nil
}

// report logs what a settled change of members wrote.
func (t *term) report(s summary) {
	t.a.s.Logger.Info("The ring's objects without a live owner are placed among its members.",
		"objects", s.objects, "ownersSet", s.owned)
}
