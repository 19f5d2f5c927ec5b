package ring

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/metadata"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/kopf-go/kopf/internal/jitter"
)

// term is one stretch of this replica's leadership: a queue of its own
// and the objects seen but not yet placed. The members' liveness is the
// follower's, which outlives terms.
type term struct {
	a *Assigner
	f *follower
	// kinds are the kinds' metadata clients, byKind the same for writes;
	// sources are what it lists and watches now.
	kinds     []kindClient
	byKind    []metadata.Getter
	sourcesMu sync.Mutex
	sources   []source
	queue     workqueue.TypedRateLimitingInterface[key]
	tally     tally

	mu       sync.Mutex
	members  []string // the live members, as last computed
	round    int      // counts the changes of members
	unlisted bool     // the last list of the objects failed
	// doubting: the follower was in doubt about members it never saw
	// when the objects were last placed; its end places them again.
	doubting bool

	// pending holds the latest sighting of every queued object: what the
	// assigner keeps of an object is only what it has still to place.
	pendingMu sync.Mutex
	pending   map[key]seen
}

// assign runs one term until ctx ends: it watches the kinds' metadata,
// waits for the follower, and places objects whenever they or the
// members change. It returns once its goroutines have.
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
	// The members first: what the watches pass on is placed among them.
	t.recount(ctx)
	wg.Go(func() { t.watchSources(ctx) })
	for range a.s.Workers {
		wg.Go(func() { t.work(ctx) })
	}
	t.follow(ctx)
	return nil
}

// watchSources watches the sources of the served namespaces, starting and
// stopping watches as namespaces come and go, until ctx ends.
func (t *term) watchSources(ctx context.Context) {
	type watching struct {
		cancel context.CancelFunc
		done   chan struct{}
	}
	active := map[string]watching{}
	defer func() {
		for _, w := range active {
			w.cancel()
			<-w.done
		}
	}()
	for {
		names, all, changed := t.a.served()
		sources := sourcesIn(t.kinds, names, all)
		t.sourcesMu.Lock()
		t.sources = sources
		t.sourcesMu.Unlock()
		ids := map[string]bool{}
		for _, src := range sources {
			ids[src.id] = true
			if _, ok := active[src.id]; ok {
				continue
			}
			sctx, cancel := context.WithCancel(ctx)
			w := watching{cancel: cancel, done: make(chan struct{})}
			r := src.reflector(t.offer)
			go func() {
				defer close(w.done)
				r.RunWithContext(sctx)
			}()
			active[src.id] = w
		}
		for id, w := range active {
			if !ids[id] {
				w.cancel()
				<-w.done
				delete(active, id)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-changed: // a nil channel: never
		}
	}
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
	names, all, _ := a.served()
	return &term{a: a, f: f, kinds: kinds, byKind: byKind, sources: sourcesIn(kinds, names, all), pending: map[key]seen{},
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

// follow recomputes the live members at every Lease event and whenever
// a member's Lease would expire, until ctx ends. What failed (a member's
// death could not be confirmed, the objects could not be listed) is
// tried again after a renew period.
func (t *term) follow(ctx context.Context) {
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
// start, or the last list failed), queues every object to be placed
// among them. Members seen expired are confirmed dead first; those that
// could not be count as live meanwhile. True if it must look again: a
// confirmation or the list failed.
func (t *term) recount(ctx context.Context) (again bool) {
	now := t.a.s.Clock.Now()
	dead, pending, err := confirmDead(ctx, t.a.leases.Leases(t.a.s.Namespace), t.a.s.Ring, t.f.live, now)
	if err != nil && ctx.Err() == nil {
		t.a.s.Logger.Error(err, "Members whose Leases expired could not be confirmed dead; they count as live until they are.",
			"members", pending)
	}
	if len(dead) > 0 {
		t.a.s.Logger.Info("Members stopped renewing their Leases; they count as dead, and their Leases are deleted.", "dead", dead)
	}
	if err := deleteReleased(ctx, t.a.leases.Leases(t.a.s.Namespace), t.a.s.Ring, t.f.staleReleases(now)); err != nil && ctx.Err() == nil {
		t.a.s.Logger.V(1).Info("Released Leases could not be deleted; they are tried again later.", "error", err.Error())
	}
	live := append(t.f.live.Live(now), pending...)
	slices.Sort(live)
	live = slices.Compact(live)
	doubting := t.f.live.Doubting(now)
	t.mu.Lock()
	if t.round > 0 && slices.Equal(live, t.members) && !t.unlisted && doubting == t.doubting {
		t.mu.Unlock()
		return len(pending) > 0
	}
	t.members, t.doubting = live, doubting
	t.round++
	round := t.round
	t.mu.Unlock()

	t.a.s.Logger.Info("The ring's members changed.", "live", live)
	if t.a.s.OnMembers != nil {
		t.a.s.OnMembers(live)
	}
	keys, sightings, err := t.listAll(ctx)
	if err != nil && ctx.Err() == nil {
		t.a.s.Logger.Error(err, "The ring's objects could not all be listed; those listed are placed, and the list is tried again after a renew period.")
	}
	t.mu.Lock()
	t.unlisted = err != nil
	t.mu.Unlock()
	if s, ok := t.tally.open(round, keys); ok {
		t.report(s)
	}
	for i, k := range keys {
		t.offerSeen(k, sightings[i])
	}
	return len(pending) > 0 || err != nil
}

// listAll lists every object of every source, a page at a time, and
// keeps of each only what placing reads.
func (t *term) listAll(ctx context.Context) ([]key, []seen, error) {
	var keys []key
	var sightings []seen
	var errs []error
	t.sourcesMu.Lock()
	sources := t.sources
	t.sourcesMu.Unlock()
	for _, src := range sources {
		err := src.listAll(ctx, func(k key, o *metav1.PartialObjectMetadata) {
			keys, sightings = append(keys, k), append(sightings, seenOf(t.a.keys, o))
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("list %s: %w", t.a.s.Kinds[src.kind], err))
		}
	}
	return keys, sightings, errors.Join(errs...)
}

// report logs what a settled change of members wrote.
func (t *term) report(s summary) {
	t.a.s.Logger.Info("The ring's objects are placed among its members.",
		"objects", s.objects, "ownersSet", s.owned, "handoversRequested", s.asked)
}
