package ring

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/kopf-go/kopf/internal/sharding"
)

// observer watches, on every replica, the two Leases that every member
// needs whether it campaigns or not: the ring's epoch, which it hands to
// OnEpoch and OnSilent, and the assigner's election, whose record tells
// whether anyone leads. From the two it tells whether this replica is a
// candidate (sharding.md, "Candidates"): one of the epoch's candidates,
// a replica of a ring without an epoch, or any replica once nobody has
// renewed the election for a lease duration (every candidate is gone).
// Each is a watch of one named Lease: what a replica receives of them
// does not grow with the ring.
type observer struct {
	a *Assigner
	// epochs and election are the informers of the two Leases.
	epochs, election toolscache.SharedIndexInformer
	// changed is poked at every event of either: the candidacy may have
	// changed.
	changed chan struct{}

	mu sync.Mutex
	// epoch is the last epoch seen; published tells one was (a Lease
	// with members).
	epoch     sharding.Epoch
	published bool
	// silent are the members that OnSilent was told of, while the epoch
	// lists them silent.
	silent map[string]bool
	// record is the election record as last seen to change (nil: absent),
	// recordAt when; renewed tells whether a change was seen since the
	// informer's first listing, which alone says nothing of its age.
	record   *coordinationv1.Lease
	recordAt time.Time
	renewed  bool
	// listedAt is when both informers had first listed (zero until then).
	listedAt time.Time
	// watches are the campaigns' watches of the election record
	// (watchRecords).
	watches map[*recordWatch]struct{}
}

// startGrace is how long a replica that has just started waits for the
// election's first renewal before it counts the election orphaned: an
// assigner renews every electionRetry, so two of them is enough to tell
// a live one, without having every replica that starts follow every
// Lease for a moment.
func startGrace(renewPeriod time.Duration) time.Duration { return 2 * electionRetry(renewPeriod) }

// newObserver makes the informers of the two Leases.
func (a *Assigner) newObserver() (*observer, error) {
	o := a.observing()
	o.epochs = a.namedLease(EpochLease(a.s.Ring))
	o.election = a.namedLease(AssignerLease(a.s.Ring))
	if _, err := o.epochs.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    o.sawEpoch,
		UpdateFunc: func(_, obj any) { o.sawEpoch(obj) },
	}); err != nil {
		return nil, fmt.Errorf("watch the ring's epoch: %w", err)
	}
	if _, err := o.election.AddEventHandler(toolscache.ResourceEventHandlerDetailedFuncs{
		AddFunc:    func(obj any, listing bool) { o.sawRecord(obj, listing) },
		UpdateFunc: func(_, obj any) { o.sawRecord(obj, false) },
		DeleteFunc: func(any) { o.sawRecord(nil, false) },
	}); err != nil {
		return nil, fmt.Errorf("watch the ring's election: %w", err)
	}
	return o, nil
}

// observing is an observer without its informers: what they tell it
// comes through sawEpoch, sawRecord and listed.
func (a *Assigner) observing() *observer {
	return &observer{a: a, changed: make(chan struct{}, 1), silent: map[string]bool{}, watches: map[*recordWatch]struct{}{}}
}

// namedLease is an informer of the one Lease with the given name in the
// ring's namespace.
func (a *Assigner) namedLease(name string) toolscache.SharedIndexInformer {
	selector := fields.OneTermEqualSelector("metadata.name", name).String()
	return a.leaseInformer(func(opts *metav1.ListOptions) { opts.FieldSelector = selector })
}

// leaseInformer is an informer of the Leases of the ring's namespace that
// selection selects.
func (a *Assigner) leaseInformer(selection func(*metav1.ListOptions)) toolscache.SharedIndexInformer {
	leases := a.leases.Leases(a.s.Namespace)
	lw := &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			selection(&opts)
			return leases.List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			selection(&opts)
			return leases.Watch(ctx, opts)
		},
	}
	return toolscache.NewSharedIndexInformer(lw, &coordinationv1.Lease{}, 0, toolscache.Indexers{})
}

// run watches the two Leases until ctx ends; it returns once both
// informers have stopped.
func (o *observer) run(ctx context.Context) {
	var informing sync.WaitGroup
	informing.Go(func() { o.epochs.RunWithContext(ctx) })
	informing.Go(func() { o.election.RunWithContext(ctx) })
	if toolscache.WaitForCacheSync(ctx.Done(), o.epochs.HasSynced, o.election.HasSynced) {
		o.listed()
	}
	informing.Wait()
}

// listed records that both Leases were listed.
func (o *observer) listed() {
	o.mu.Lock()
	o.listedAt = o.a.s.Clock.Now()
	o.mu.Unlock()
	o.poke()
}

// sawEpoch hands a version of the epoch Lease to OnEpoch, and its newly
// silent members to OnSilent.
func (o *observer) sawEpoch(obj any) {
	lease, ok := obj.(*coordinationv1.Lease)
	if !ok {
		return
	}
	e := Published(lease)
	silent := parseNames(lease.Annotations[SilentAnnotation])
	o.mu.Lock()
	o.epoch, o.published = e, len(e.Members) > 0
	var tell []string
	for _, m := range silent {
		if !o.silent[m] && slices.Contains(e.Members, m) {
			tell = append(tell, m)
		}
	}
	for m := range o.silent {
		if !slices.Contains(silent, m) {
			delete(o.silent, m)
		}
	}
	for _, m := range tell {
		o.silent[m] = true
	}
	o.mu.Unlock()
	if o.a.s.OnEpoch != nil {
		o.a.s.OnEpoch(e)
	}
	if o.a.s.OnSilent != nil {
		for _, m := range tell {
			o.a.s.OnSilent(m)
		}
	}
	o.poke()
}

// sawRecord takes a version of the election record (nil: deleted). One
// that the informer's first listing brings is only a first sight.
func (o *observer) sawRecord(obj any, listing bool) {
	lease, _ := obj.(*coordinationv1.Lease)
	now := o.a.s.Clock.Now()
	o.mu.Lock()
	if o.recordAt.IsZero() || changed(o.record, lease) {
		event := watch.Event{Type: watch.Modified, Object: lease}
		if lease == nil {
			event = watch.Event{Type: watch.Deleted, Object: o.record}
		}
		o.record, o.recordAt = lease, now
		o.renewed = o.renewed || !listing
		for w := range o.watches {
			select {
			case w.events <- event:
			default: // a campaign behind: it watches again at its next read
				delete(o.watches, w)
				close(w.events)
			}
		}
	}
	o.mu.Unlock()
	o.poke()
}

// watchRecords is a watch of the election record, fed by this observer's
// informer: a candidate's campaign receives the election's renewals once,
// not once more on a watch of its own.
func (o *observer) watchRecords() watch.Interface {
	w := &recordWatch{o: o, events: make(chan watch.Event, 16)}
	o.mu.Lock()
	o.watches[w] = struct{}{}
	o.mu.Unlock()
	return w
}

// recordWatch is one campaign's watch of the election record.
type recordWatch struct {
	o      *observer
	events chan watch.Event
}

func (w *recordWatch) ResultChan() <-chan watch.Event { return w.events }

func (w *recordWatch) Stop() {
	w.o.mu.Lock()
	defer w.o.mu.Unlock()
	if _, ok := w.o.watches[w]; ok {
		delete(w.o.watches, w)
		close(w.events)
	}
}

// observedElection is the election's Lease API for a campaign, with the
// observer's watch in place of one of its own.
type observedElection struct {
	ElectionLeases
	o *observer
}

func (l observedElection) Watch(context.Context, metav1.ListOptions) (watch.Interface, error) {
	return l.o.watchRecords(), nil
}

// candidate tells whether the member (this replica's; "" if it has not
// joined) is a candidate now, and when that may change without an event
// (zero: only with one). Before both Leases were listed it is not.
func (o *observer) candidate(member string, now time.Time) (bool, time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.listedAt.IsZero() {
		return false, time.Time{}
	}
	orphanedAt := o.recordAt.Add(o.a.s.LeaseDuration)
	if !o.renewed {
		orphanedAt = o.listedAt.Add(startGrace(o.a.s.RenewPeriod))
	}
	switch {
	case !now.Before(orphanedAt):
		return true, time.Time{}
	case !o.published, o.a.s.Member == nil:
		return true, orphanedAt
	}
	return slices.Contains(o.epoch.Candidates(o.a.s.Candidates), member), orphanedAt
}

// seen is the election record as this replica last saw it change, for
// a campaign that begins: it counts the record's age from then.
func (o *observer) seen() Observation {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.recordAt.IsZero() {
		return Observation{}
	}
	return Observation{Lease: o.record, At: o.recordAt}
}

// await waits until the replica's candidacy is want; false if ctx has
// ended.
func (o *observer) await(ctx context.Context, want bool) bool {
	for ctx.Err() == nil {
		is, until := o.candidate(o.a.member(), o.a.s.Clock.Now())
		if is == want {
			return true
		}
		var timeout <-chan time.Time
		var timer clock.Timer
		if !until.IsZero() {
			timer = o.a.s.Clock.NewTimer(until.Sub(o.a.s.Clock.Now()))
			timeout = timer.C()
		}
		select {
		case <-ctx.Done():
		case <-o.changed:
		case <-timeout:
		}
		if timer != nil {
			timer.Stop()
		}
	}
	return false
}

// poke wakes the candidacy's wait; a wake-up already pending covers
// this one.
func (o *observer) poke() {
	select {
	case o.changed <- struct{}{}:
	default:
	}
}
