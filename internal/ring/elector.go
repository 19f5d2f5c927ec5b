package ring

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
)

// ElectionLeases is what an Elector needs of its namespace's Leases;
// client-go's typed LeaseInterface has it.
type ElectionLeases interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*coordinationv1.Lease, error)
	Create(ctx context.Context, lease *coordinationv1.Lease, opts metav1.CreateOptions) (*coordinationv1.Lease, error)
	Update(ctx context.Context, lease *coordinationv1.Lease, opts metav1.UpdateOptions) (*coordinationv1.Lease, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// ElectorConfig configures an Elector, with leader election's three
// durations: a record unchanged for LeaseDuration (or the duration it
// declares) has expired; the leader renews every RetryPeriod, and stops
// leading once it has not renewed for RenewDeadline; candidates read the
// Lease every PollPeriod besides watching it.
type ElectorConfig struct {
	// Name is the Lease's; Identity is the candidate's.
	Name, Identity                            string
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// Seen, if set, is the record as this process last saw it change
	// before the campaign began: a record that is still the same is due
	// at the expiry counted from then, not from the campaign's first read
	// (a replica that watched the election before it campaigned).
	Seen Observation
	// PollPeriod is how often a candidate reads the Lease in case its
	// watch is stuck (RetryPeriod if zero). The watch brings every
	// renewal, and a stuck one costs no safety: the candidate tries at
	// the expiry of what it saw last, and a renewal it missed makes that
	// write conflict, after which it reads the Lease. The poll only finds
	// a release or a renewal sooner, so it may be rare: every candidate
	// reads the Lease that often.
	PollPeriod time.Duration
	// Clock times everything (real by default).
	Clock  clock.WithTicker
	Logger logr.Logger
}

// Elector elects one leader among candidates on one Lease. Its record is
// client-go's LeaseLock's (holderIdentity, leaseDurationSeconds,
// acquireTime, renewTime, leaseTransitions), so that it elects together
// with client-go's LeaderElector on the same Lease, as replicas of two
// versions do during a rolling update. Unlike that elector, a candidate
// watches the Lease and tries to acquire it at the very moment that the
// record it last saw change expires, rather than at the next of its
// polls; it still reads the Lease every retry period, in case the watch
// is stuck. As there, expiry is judged from when this candidate saw the
// record change, by its own clock, never from the renewTime in it: clocks
// of two machines are not compared.
type Elector struct {
	leases ElectionLeases
	c      ElectorConfig
}

// errLost is a renewal's finding that someone else holds the Lease.
var errLost = errors.New("the Lease is held by another candidate")

// NewElector checks the configuration.
func NewElector(leases ElectionLeases, c ElectorConfig) (*Elector, error) {
	if c.Name == "" || c.Identity == "" {
		return nil, errors.New("an elector needs a Lease name and an identity")
	}
	if !(0 < c.RetryPeriod && c.RetryPeriod < c.RenewDeadline && c.RenewDeadline < c.LeaseDuration) {
		return nil, fmt.Errorf("election durations must nest: 0 < retry period %s < renew deadline %s < lease duration %s",
			c.RetryPeriod, c.RenewDeadline, c.LeaseDuration)
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.PollPeriod <= 0 {
		c.PollPeriod = c.RetryPeriod
	}
	return &Elector{leases: leases, c: c}, nil
}

// Run campaigns until ctx ends. Once it wins, it sends won a context that
// is cancelled when it stops leading: when ctx ends, or when it has not
// renewed the Lease for the renew deadline, or has found it taken. It
// returns once ctx has ended, after releasing the Lease if it is still
// this candidate's, so that another can lead at once; the caller ends ctx
// only when it does nothing more as the leader.
func (e *Elector) Run(ctx context.Context, won chan<- context.Context) {
	held, renewed, ok := e.campaign(ctx)
	if !ok {
		return
	}
	held = e.lead(ctx, held, renewed, won)
	<-ctx.Done()
	e.release(ctx, held)
}

// Observation is the record a candidate last saw change, and when, by
// its own clock; a nil Lease is an absent one.
type Observation struct {
	Lease *coordinationv1.Lease
	At    time.Time
}

// campaign follows the Lease until this candidate acquires it, and
// returns the Lease as written and when the write began; ok is false if
// ctx ended first.
func (e *Elector) campaign(ctx context.Context) (held *coordinationv1.Lease, renewed time.Time, ok bool) {
	poll := e.c.Clock.NewTicker(e.c.PollPeriod)
	defer poll.Stop()
	// What this process saw before counts: a record unchanged since is
	// as old as then.
	seen := e.c.Seen
	// expiry fires when the record seen expires; nil while none is held.
	var expiry clock.Timer
	var expired <-chan time.Time
	defer func() {
		if expiry != nil {
			expiry.Stop()
		}
	}()
	var w watch.Interface
	var events <-chan watch.Event
	defer func() {
		if w != nil {
			w.Stop()
		}
	}()

	// consider takes a record read or watched in; a changed one is timed
	// anew. A record that is free now is tried at once.
	consider := func(lease *coordinationv1.Lease) (acquired bool) {
		for attempt := 0; ; attempt++ {
			if changed(seen.Lease, lease) || seen.At.IsZero() {
				seen = Observation{Lease: lease, At: e.c.Clock.Now()}
				if expiry != nil {
					expiry.Stop()
					expiry, expired = nil, nil
				}
			}
			if expiry == nil && seen.Lease != nil && !e.free(seen.Lease) {
				expiry = e.c.Clock.NewTimer(seen.At.Add(e.duration(seen.Lease)).Sub(e.c.Clock.Now()))
				expired = expiry.C()
			}
			if !e.due(seen, e.c.Clock.Now()) {
				return false
			}
			written, began, err := e.acquire(ctx, seen.Lease)
			switch {
			case err == nil:
				held, renewed = written, began
				return true
			case !isRace(err) || attempt >= 2:
				if ctx.Err() == nil {
					e.c.Logger.Error(err, "Could not acquire the election Lease; trying again later.", "lease", e.c.Name)
				}
				return false
			}
			// Someone else wrote it: judge what they wrote.
			e.c.Logger.V(1).Info("Another candidate wrote the election Lease first.", "lease", e.c.Name)
			var read bool
			if lease, read = e.read(ctx); !read {
				return false
			}
		}
	}
	watchLease := func() {
		var err error
		w, err = e.leases.Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", e.c.Name).String()})
		if err != nil {
			w, events = nil, nil
			if ctx.Err() == nil {
				e.c.Logger.V(1).Info("Could not watch the election Lease; reading it every retry period.", "lease", e.c.Name, "error", err.Error())
			}
			return
		}
		events = w.ResultChan()
	}

	if lease, read := e.read(ctx); read && consider(lease) {
		return held, renewed, true
	}
	watchLease()
	for {
		select {
		case <-ctx.Done():
			return nil, time.Time{}, false
		case <-expired:
			if consider(seen.Lease) {
				return held, renewed, true
			}
		case <-poll.C():
			if lease, read := e.read(ctx); read && consider(lease) {
				return held, renewed, true
			}
			if w == nil {
				watchLease()
			}
		case ev, open := <-events:
			var lease *coordinationv1.Lease
			switch {
			case !open || ev.Type == watch.Error:
				// The next poll watches again: one that ends at once
				// must not spin.
				w.Stop()
				w, events = nil, nil
				continue
			case ev.Type == watch.Deleted:
			case ev.Type == watch.Added || ev.Type == watch.Modified:
				l, isLease := ev.Object.(*coordinationv1.Lease)
				if !isLease {
					continue
				}
				lease = l
			default: // bookmarks
				continue
			}
			if consider(lease) {
				return held, renewed, true
			}
		}
	}
}

// read gets the Lease; nil if it is absent. ok is false if it could not
// be read.
func (e *Elector) read(ctx context.Context) (lease *coordinationv1.Lease, ok bool) {
	ctx, cancel := context.WithTimeout(ctx, e.c.RenewDeadline)
	defer cancel()
	lease, err := e.leases.Get(ctx, e.c.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, true
	case err != nil:
		if ctx.Err() == nil {
			e.c.Logger.V(1).Info("Could not read the election Lease.", "lease", e.c.Name, "error", err.Error())
		}
		return nil, false
	}
	return lease, true
}

// changed reports whether a record differs from the one seen before.
func changed(before, now *coordinationv1.Lease) bool {
	if before == nil || now == nil {
		return (before == nil) != (now == nil)
	}
	return before.ResourceVersion != now.ResourceVersion ||
		holder(before) != holder(now) ||
		!renewTime(before).Equal(renewTime(now)) ||
		ptr.Deref(before.Spec.LeaseTransitions, 0) != ptr.Deref(now.Spec.LeaseTransitions, 0)
}

// holder is a Lease's holder; "" if released.
func holder(lease *coordinationv1.Lease) string { return ptr.Deref(lease.Spec.HolderIdentity, "") }

// free reports whether a Lease may be acquired regardless of its age:
// released (client-go's release leaves no holder), or this candidate's
// own (an earlier run of this identity), as client-go's elector holds.
func (e *Elector) free(lease *coordinationv1.Lease) bool {
	h := holder(lease)
	return h == "" || h == e.c.Identity
}

// duration is how long a record lasts after it was seen: what it declares,
// as client-go's elector judges, or this elector's own if it declares none.
func (e *Elector) duration(lease *coordinationv1.Lease) time.Duration {
	if d := DeclaredDuration(lease); d > 0 {
		return d
	}
	return e.c.LeaseDuration
}

// due reports whether the record seen may be acquired at now.
func (e *Elector) due(seen Observation, now time.Time) bool {
	return seen.Lease == nil || e.free(seen.Lease) || !now.Before(seen.At.Add(e.duration(seen.Lease)))
}

// isRace reports whether a write lost to another writer.
func isRace(err error) bool { return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) }

// acquire writes this candidate into the record seen, or creates the
// Lease if absent, on the condition that it is unchanged since seen.
func (e *Elector) acquire(ctx context.Context, seen *coordinationv1.Lease) (*coordinationv1.Lease, time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, e.c.RenewDeadline)
	defer cancel()
	began := e.c.Clock.Now()
	now := metav1.NewMicroTime(began)
	if seen == nil {
		lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: e.c.Name}}
		lease.Spec.LeaseTransitions = ptr.To(int32(0))
		lease.Spec.AcquireTime = &now
		written, err := e.leases.Create(ctx, e.claimed(lease, now), metav1.CreateOptions{})
		return written, began, err
	}
	lease := seen.DeepCopy()
	if holder(seen) != e.c.Identity || lease.Spec.AcquireTime == nil {
		// A change of holder, as client-go's elector counts them.
		if holder(seen) != e.c.Identity {
			lease.Spec.LeaseTransitions = ptr.To(ptr.Deref(seen.Spec.LeaseTransitions, 0) + 1)
		}
		lease.Spec.AcquireTime = &now
	}
	written, err := e.leases.Update(ctx, e.claimed(lease, now), metav1.UpdateOptions{})
	return written, began, err
}

// claimed is a Lease with this candidate as its holder, renewed at now.
func (e *Elector) claimed(lease *coordinationv1.Lease, now metav1.MicroTime) *coordinationv1.Lease {
	lease.Spec.HolderIdentity = ptr.To(e.c.Identity)
	lease.Spec.LeaseDurationSeconds = ptr.To(leaseSeconds(e.c.LeaseDuration))
	lease.Spec.RenewTime = &now
	return lease
}
