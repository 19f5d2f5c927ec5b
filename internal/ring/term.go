package ring

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// term is one stretch of this replica's leadership: a cache and a queue
// of its own. The members' liveness is the follower's, which outlives
// terms.
type term struct {
	a     *Assigner
	f     *follower
	cache cache.Cache
	queue workqueue.TypedRateLimitingInterface[key]
	tally tally

	mu      sync.Mutex
	members []string // the live members, as last computed
	round   int      // counts the changes of members
}

// assign runs one term until ctx ends: it caches the kinds' metadata,
// waits for the cache and the follower, and places objects whenever they
// or the members change. It returns once its goroutines have.
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
	if err := t.watch(ctx); err != nil {
		return err
	}
	wg.Go(func() {
		if err := t.cache.Start(ctx); err != nil {
			a.s.Logger.Error(err, "The assigner's cache failed.")
		}
	})
	if !t.cache.WaitForCacheSync(ctx) || !toolscache.WaitForCacheSync(ctx.Done(), f.synced) {
		if ctx.Err() != nil {
			return nil
		}
		return errors.New("the assigner's cache did not sync")
	}
	for range a.s.Workers {
		wg.Go(func() { t.work(ctx) })
	}
	t.follow(ctx)
	return nil
}

// newTerm makes a term's cache (the kinds' metadata, trimmed to what the
// assigner reads) and queue.
func (a *Assigner) newTerm(f *follower) (*term, error) {
	opts := cache.Options{HTTPClient: a.http, Scheme: a.scheme, Mapper: a.mapper,
		DefaultTransform: trimMetadata(a.s.Ring), NewInformer: newInformer}
	if len(a.s.Namespaces) > 0 {
		opts.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range a.s.Namespaces {
			opts.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	c, err := cache.New(a.cfg, opts)
	if err != nil {
		return nil, fmt.Errorf("make the assigner's cache: %w", err)
	}
	return &term{a: a, f: f, cache: c,
		queue: workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[key]())}, nil
}

// watch adds the handlers of the objects' events.
func (t *term) watch(ctx context.Context) error {
	for i, gvk := range t.a.s.Kinds {
		informer, err := t.cache.GetInformer(ctx, partial(gvk))
		if err != nil {
			return fmt.Errorf("watch %s: %w", gvk, err)
		}
		enqueue := func(obj any) {
			if o, ok := obj.(metav1.Object); ok {
				t.queue.Add(key{kind: i, NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}})
			}
		}
		if _, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    enqueue,
			UpdateFunc: func(_, obj any) { enqueue(obj) },
		}); err != nil {
			return fmt.Errorf("watch %s: %w", gvk, err)
		}
	}
	return nil
}

// follow recomputes the live members at every Lease event and whenever
// a member's Lease would expire, until ctx ends. A member whose death
// could not be confirmed is asked about again after a renew period.
func (t *term) follow(ctx context.Context) {
	for {
		unconfirmed := t.recount(ctx)
		var expiry <-chan time.Time
		var timer clock.Timer
		now := t.a.s.Clock.Now()
		next, ok := t.f.live.NextExpiry(now)
		if retry := now.Add(t.a.s.RenewPeriod); unconfirmed && (!ok || retry.Before(next)) {
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
// start), queues every object to be placed among them. Members seen
// expired are confirmed dead first; true if some could not be, and count
// as live meanwhile.
func (t *term) recount(ctx context.Context) (unconfirmed bool) {
	now := t.a.s.Clock.Now()
	dead, pending, err := confirmDead(ctx, t.a.leases.Leases(t.a.s.Namespace), t.a.s.Ring, t.f.live, now)
	if err != nil && ctx.Err() == nil {
		t.a.s.Logger.Error(err, "Members whose Leases expired could not be confirmed dead; they count as live until they are.",
			"members", pending)
	}
	if len(dead) > 0 {
		t.a.s.Logger.Info("Members stopped renewing their Leases; they count as dead, and their Leases are deleted.", "dead", dead)
	}
	live := append(t.f.live.Live(now), pending...)
	slices.Sort(live)
	live = slices.Compact(live)
	t.mu.Lock()
	if t.round > 0 && slices.Equal(live, t.members) {
		t.mu.Unlock()
		return len(pending) > 0
	}
	t.members = live
	t.round++
	round := t.round
	t.mu.Unlock()

	t.a.s.Logger.Info("The ring's members changed.", "live", live)
	if t.a.s.OnMembers != nil {
		t.a.s.OnMembers(live)
	}
	keys, err := t.all(ctx)
	if err != nil {
		t.a.s.Logger.Error(err, "The ring's objects could not be listed from the assigner's cache.")
	}
	if s, ok := t.tally.open(round, keys); ok {
		t.report(s)
	}
	for _, k := range keys {
		t.queue.Add(k)
	}
	return len(pending) > 0
}

// all lists the keys of every object of every kind in the cache.
func (t *term) all(ctx context.Context) ([]key, error) {
	var keys []key
	for i, gvk := range t.a.s.Kinds {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := t.cache.List(ctx, list); err != nil {
			return keys, fmt.Errorf("list %s: %w", gvk, err)
		}
		for _, o := range list.Items {
			keys = append(keys, key{kind: i, NamespacedName: types.NamespacedName{Namespace: o.Namespace, Name: o.Name}})
		}
	}
	return keys, nil
}

// report logs what a settled change of members wrote.
func (t *term) report(s summary) {
	t.a.s.Logger.Info("The ring's objects are placed among its members.",
		"objects", s.objects, "ownersSet", s.owned, "handoversRequested", s.asked)
}

// partial is an empty metadata-only object of a kind.
func partial(gvk schema.GroupVersionKind) *metav1.PartialObjectMetadata {
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(gvk)
	return obj
}
