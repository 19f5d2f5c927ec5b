package ring

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/internal/sharding"
)

// workers is how many objects a term places at once: writes are small,
// and a handful keeps a rebalance of many objects from queueing behind
// one slow request.
const workers = 4

// term is one stretch of this replica's leadership: a cache, the members'
// liveness and a queue of its own, so that a new term starts with no
// history, as a new leader does.
type term struct {
	a     *Assigner
	cache cache.Cache
	live  *sharding.Liveness
	queue workqueue.TypedRateLimitingInterface[key]
	// changed is poked by every Lease event: the members may have changed.
	changed chan struct{}
	tally   tally

	mu      sync.Mutex
	members []string // the live members, as last computed
	round   int      // counts the changes of members
}

// assign runs one term until ctx ends: it caches the kinds' metadata and
// the ring's Leases, waits for the cache, and places objects whenever
// they or the members change. It returns once its goroutines have.
func (a *Assigner) assign(ctx context.Context) error {
	t, err := a.newTerm()
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
	if !t.cache.WaitForCacheSync(ctx) {
		if ctx.Err() != nil {
			return nil
		}
		return errors.New("the assigner's cache did not sync")
	}
	for range workers {
		wg.Go(func() { t.work(ctx) })
	}
	t.follow(ctx)
	return nil
}

// newTerm makes a term's cache (metadata only for the kinds, the ring's
// Leases by their label), liveness and queue.
func (a *Assigner) newTerm() (*term, error) {
	opts := cache.Options{HTTPClient: a.http, Scheme: a.scheme, Mapper: a.mapper,
		DefaultTransform: cache.TransformStripManagedFields(), NewInformer: newInformer,
		ByObject: map[client.Object]cache.ByObject{&coordinationv1.Lease{}: {
			Namespaces: map[string]cache.Config{a.s.Namespace: {}},
			Label:      labels.SelectorFromSet(labels.Set{RingLabel: a.s.Ring}),
		}}}
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
	return &term{a: a, cache: c, live: sharding.NewLiveness(a.s.LeaseDuration),
		queue:   workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[key]()),
		changed: make(chan struct{}, 1)}, nil
}

// watch adds the handlers of the Leases' and the objects' events.
func (t *term) watch(ctx context.Context) error {
	leases, err := t.cache.GetInformer(ctx, &coordinationv1.Lease{})
	if err != nil {
		return fmt.Errorf("watch the ring's Leases: %w", err)
	}
	if _, err := leases.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    t.leaseSeen,
		UpdateFunc: func(_, obj any) { t.leaseSeen(obj) },
		DeleteFunc: t.leaseGone,
	}); err != nil {
		return fmt.Errorf("watch the ring's Leases: %w", err)
	}
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

// leaseSeen records a member's Lease as seen now: a new version is a
// renewal.
func (t *term) leaseSeen(obj any) {
	lease, ok := obj.(*coordinationv1.Lease)
	if !ok {
		return
	}
	if member, ok := MemberOfLease(t.a.s.Ring, lease.Name); ok {
		t.live.Observe(member, lease.ResourceVersion, t.a.s.Clock.Now())
		t.poke()
	}
}

// leaseGone records a member that left: its Lease was deleted.
func (t *term) leaseGone(obj any) {
	if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	lease, ok := obj.(*coordinationv1.Lease)
	if !ok {
		return
	}
	if member, ok := MemberOfLease(t.a.s.Ring, lease.Name); ok {
		t.live.Gone(member)
		t.poke()
	}
}

// poke wakes follow; a wake-up already pending covers this one.
func (t *term) poke() {
	select {
	case t.changed <- struct{}{}:
	default:
	}
}

// follow recomputes the live members at every Lease event and whenever
// a member's Lease would expire, until ctx ends.
func (t *term) follow(ctx context.Context) {
	for {
		t.recount(ctx)
		var expiry <-chan time.Time
		var timer clock.Timer
		now := t.a.s.Clock.Now()
		if next, ok := t.live.NextExpiry(now); ok {
			timer = t.a.s.Clock.NewTimer(next.Sub(now))
			expiry = timer.C()
		}
		select {
		case <-ctx.Done():
		case <-t.changed:
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
// start), queues every object to be placed among them.
func (t *term) recount(ctx context.Context) {
	live := t.live.Live(t.a.s.Clock.Now())
	t.mu.Lock()
	if t.round > 0 && slices.Equal(live, t.members) {
		t.mu.Unlock()
		return
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
