package ring

import (
	"context"
	"fmt"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/kopf-go/kopf/internal/sharding"
)

// follower follows the ring's Leases while the replica is a candidate
// (sharding.md, "Candidates"), whether it leads or not. A candidate that
// becomes the assigner then knows how long each member has gone without
// renewing, and can count a member dead as soon as its lease duration
// has run out, rather than a whole lease duration after its own term
// began, as an observer without history must (sharding.md, "The
// assigner"). Only the candidates follow: what the ring receives of its
// Leases then grows with its size, not with its square.
type follower struct {
	a        *Assigner
	live     *sharding.Liveness
	informer toolscache.SharedIndexInformer
	// changed is poked by every Lease event: the members may have changed.
	changed chan struct{}

	mu sync.Mutex
	// released are the Leases seen released and not yet seen deleted, by
	// member: the assigner deletes them a lease duration after the release
	// was seen.
	released map[string]release
	// stopping are the members whose Leases say their graceful stop has
	// begun: nothing new is placed on them.
	stopping map[string]bool
	// stopsHold are the members whose Leases say they follow the rule
	// that a stopped member adopts only what it held (RuleStopsHold).
	stopsHold map[string]bool
	// versions are the Leases' versions seen, by when.
	versions versionLog
}

// release is a released Lease's version and when the release was seen.
type release struct {
	version string
	seen    time.Time
}

// newFollower makes the informer of the ring's Leases, selected by the
// ring's label, and the liveness it keeps.
func (a *Assigner) newFollower() (*follower, error) {
	selector := labels.SelectorFromSet(labels.Set{RingLabel: a.s.Ring}).String()
	f := &follower{a: a, live: sharding.NewLiveness(a.s.LeaseDuration), changed: make(chan struct{}, 1), released: map[string]release{}, stopping: map[string]bool{}, stopsHold: map[string]bool{},
		versions: versionLog{keep: 2 * (a.s.LeaseDuration - a.s.RenewDeadline)},
		informer: a.leaseInformer(func(opts *metav1.ListOptions) { opts.LabelSelector = selector })}
	if _, err := f.informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    f.seen,
		UpdateFunc: func(_, obj any) { f.seen(obj) },
		DeleteFunc: f.gone,
	}); err != nil {
		return nil, fmt.Errorf("follow the ring's Leases: %w", err)
	}
	return f, nil
}

// run follows the Leases until ctx ends; it returns once the informer has
// stopped. The moment of the first listing ends, a lease duration later,
// the doubt about members whose Leases it never saw.
func (f *follower) run(ctx context.Context) {
	var informing sync.WaitGroup
	informing.Go(func() { f.informer.RunWithContext(ctx) })
	if toolscache.WaitForCacheSync(ctx.Done(), f.informer.HasSynced) {
		f.live.Listed(f.a.s.Clock.Now())
		f.poke()
	}
	informing.Wait()
}

// silentAmong are the members of live whose Leases have gone unrenewed
// for one and a half renew periods at now, sorted: a member renews every
// renew period, so one that missed a renewal and a half is likely dead,
// and its lease duration still has most of its time to run. The
// assigner lists them on the epoch (SilentAnnotation).
func (f *follower) silentAmong(live []string, now time.Time) []string {
	silent := f.live.Silent(now, f.a.s.RenewPeriod*silentAfter/2)
	var out []string
	for _, m := range live {
		if _, ok := silent[m]; ok {
			out = append(out, m)
		}
	}
	return out
}

// silentAfter is, in half renew periods, how long a member's Lease goes
// unrenewed before the member counts as silent.
const silentAfter = 3

// synced tells whether the informer has listed the Leases once.
func (f *follower) synced() bool { return f.informer.HasSynced() }

// seen records a member's Lease as seen now: a new version is a renewal,
// and a released one is a member that left.
func (f *follower) seen(obj any) {
	lease, ok := obj.(*coordinationv1.Lease)
	if !ok {
		return
	}
	f.versions.saw(lease.ResourceVersion, f.a.s.Clock.Now())
	member, ok := MemberOfLease(f.a.s.Ring, lease.Name)
	if !ok {
		return
	}
	f.mu.Lock()
	if Stopping(lease) && !Released(lease) {
		f.stopping[member] = true
	} else {
		delete(f.stopping, member)
	}
	f.stopsHold[member] = Follows(lease, RuleStopsHold)
	f.mu.Unlock()
	if Released(lease) {
		f.live.Forget(member)
		f.mu.Lock()
		if r, ok := f.released[member]; !ok || r.version != lease.ResourceVersion {
			f.released[member] = release{version: lease.ResourceVersion, seen: f.a.s.Clock.Now()}
		}
		f.mu.Unlock()
	} else {
		f.live.Observe(member, lease.ResourceVersion, DeclaredDuration(lease), f.a.s.Clock.Now())
	}
	f.poke()
}

// stoppingAmong are the members of live whose Leases say they stop.
func (f *follower) stoppingAmong(live []string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, m := range live {
		if f.stopping[m] {
			out = append(out, m)
		}
	}
	return out
}

// unawareAmong are the members of live whose Leases do not say that they
// follow the rule that a stopped member adopts only what it held, or
// that were never seen.
func (f *follower) unawareAmong(live []string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, m := range live {
		if !f.stopsHold[m] {
			out = append(out, m)
		}
	}
	return out
}

// gone records a Lease that was deleted. Only a released one is a member
// that left: a Lease deleted by anyone else (by hand, by a namespace's
// clean-up) leaves a member that may still be working until it notices at
// its next renewal, so it stays live until its lease has run out (the
// assigner then confirms its death, which the missing Lease does at once).
func (f *follower) gone(obj any) {
	if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	lease, ok := obj.(*coordinationv1.Lease)
	if !ok {
		return
	}
	member, ok := MemberOfLease(f.a.s.Ring, lease.Name)
	if !ok {
		return
	}
	f.mu.Lock()
	delete(f.released, member)
	delete(f.stopping, member)
	delete(f.stopsHold, member)
	f.mu.Unlock()
	if Released(lease) {
		f.live.Forget(member)
		f.poke()
		return
	}
	f.live.SawGone(member)
}

// staleReleases are the Leases seen released a lease duration or more
// ago at now and not deleted yet, by member, with their resourceVersions:
// every assigner that could have started since has seen the release.
func (f *follower) staleReleases(now time.Time) map[string]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]string{}
	for member, r := range f.released {
		if now.Sub(r.seen) >= f.a.s.LeaseDuration {
			out[member] = r.version
		}
	}
	return out
}

// askUnseen asks the API server about a member that this follower has
// never seen and that an object is granted to: past the doubt such a
// member has fenced itself, unless this follower's watch of the Leases is
// what is stuck (one watch stream stalled while the rest of its
// connection works), and it never heard of a member that is renewing. A
// Lease of the member that is there and not released counts as a renewal
// seen now, and the member as live (true); one that is gone or released
// makes it known gone (false).
func (f *follower) askUnseen(ctx context.Context, member string) (bool, error) {
	lease, err := f.a.leases.Leases(f.a.s.Namespace).Get(ctx, leaseName(f.a.s.Ring, member), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		f.live.Forget(member)
		return false, nil
	case err != nil:
		return false, fmt.Errorf("read the Lease of the member %s, which the ring's Leases never showed: %w", member, err)
	case Released(lease):
		f.live.Forget(member)
		return false, nil
	}
	f.a.s.Logger.Info("An object is granted to a member whose Lease this replica never saw, though it is there: the watch of the ring's Leases may be stuck; the member counts as live.",
		"member", member)
	f.live.Observe(member, lease.ResourceVersion, DeclaredDuration(lease), f.a.s.Clock.Now())
	f.poke()
	return true, nil
}

// poke wakes the term's loop; a wake-up already pending covers this one.
func (f *follower) poke() {
	select {
	case f.changed <- struct{}{}:
	default:
	}
}
