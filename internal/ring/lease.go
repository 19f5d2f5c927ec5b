package ring

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/internal/sharding"
	"github.com/kopf-go/kopf/pkg/keys"
)

// Wire names on a member's Lease, which lives in the ring's namespace.
const (
	// RingLabel labels every member's Lease with the member's ring, so
	// that members and the assigner find a ring's Leases by one selector.
	RingLabel = keys.ShardPrefix + "/ring"
	// IncarnationAnnotation holds the incarnation of the process that
	// holds the Lease: a process that finds another incarnation in it
	// has lost it to someone else.
	IncarnationAnnotation = keys.ShardPrefix + "/incarnation"
	// ReleasedAnnotation marks a Lease that its member released after it
	// had stopped: only then may the ring move the member's objects
	// without waiting for the Lease to expire.
	ReleasedAnnotation = keys.ShardPrefix + "/released"
	// StoppingAnnotation marks a Lease whose member's graceful stop has
	// begun: it still holds its objects, but takes nothing new
	// (docs/sharding.md, "Leaving"). On the epoch Lease, the same key
	// lists the stopping members.
	StoppingAnnotation = keys.ShardPrefix + "/stopping"
	// RulesAnnotation names the rules of the ring that the member's
	// version follows beyond those of the first epoch, joined by commas:
	// the assigner uses a rule only once every member follows it.
	RulesAnnotation = keys.ShardPrefix + "/rules"
	// RuleStopsHold is the rule that a member whose stop the epoch records
	// adopts only what it held (sharding.Epoch's Stopped and Held).
	RuleStopsHold = "stops-hold"
)

// Follows reports whether a Lease's member follows the rule.
func Follows(lease *coordinationv1.Lease, rule string) bool {
	return slices.Contains(parseNames(lease.Annotations[RulesAnnotation]), rule)
}

// Released reports whether a Lease is one its member released.
func Released(lease *coordinationv1.Lease) bool { return lease.Annotations[ReleasedAnnotation] != "" }

// Stopping reports whether a Lease's member has begun to stop.
func Stopping(lease *coordinationv1.Lease) bool { return lease.Annotations[StoppingAnnotation] != "" }

// DeclaredDuration is the lease duration that a Lease states; 0 if none.
func DeclaredDuration(lease *coordinationv1.Lease) time.Duration {
	if lease.Spec.LeaseDurationSeconds == nil {
		return 0
	}
	return time.Duration(*lease.Spec.LeaseDurationSeconds) * time.Second
}

// leaseSeconds is a lease duration in whole seconds, rounded up: others
// must not count a member dead before its own duration has run out.
func leaseSeconds(d time.Duration) int32 { return int32(math.Ceil(d.Seconds())) }

// tryJoin takes over the Lease that an earlier run of this identity left
// (a restart), or else creates a Lease under a new name. The takeover is
// an update guarded by the Lease's resourceVersion: if it succeeds, the
// ring has not counted the earlier run dead (that deletes the Lease, on
// the condition that it is unchanged), so no object of it is being moved
// away, and this run may handle them at once. Without such a Lease, this
// run is a new incarnation with a name of its own: objects that carry an
// earlier incarnation's name may be on their way to other members.
func (m *Member) tryJoin(ctx context.Context, begin time.Time) error {
	ctx, cancel := context.WithTimeout(ctx, m.s.RenewPeriod)
	defer cancel()
	var list coordinationv1.LeaseList
	if err := m.c.List(ctx, &list, client.InNamespace(m.s.Namespace), client.MatchingLabels{RingLabel: m.s.Ring}); err != nil {
		return fmt.Errorf("list the ring's Leases in %s: %w", m.s.Namespace, err)
	}
	var earlier *coordinationv1.Lease
	for i := range list.Items {
		l := &list.Items[i]
		_, isMember := MemberOfLease(m.s.Ring, l.Name)
		if !isMember || Released(l) || ptr.Deref(l.Spec.HolderIdentity, "") != m.s.Identity {
			continue
		}
		if earlier == nil || renewTime(l).After(renewTime(earlier)) {
			earlier = l
		}
	}
	now := metav1.NewMicroTime(begin)
	if earlier != nil {
		lease := m.claimed(earlier.DeepCopy(), now)
		lease.Spec.AcquireTime = &now
		if err := m.c.Update(ctx, lease); err != nil {
			return fmt.Errorf("take over the Lease %s/%s: %w", m.s.Namespace, lease.Name, err)
		}
		member, _ := MemberOfLease(m.s.Ring, lease.Name)
		m.joinedAs(member, lease, begin)
		m.s.Logger.Info("Joined the ring, taking over the Lease of an earlier run with this identity.",
			"ring", m.s.Ring, "member", member, "lease", lease.Name)
		return nil
	}
	member := sharding.MemberName(m.s.Identity, m.incarnation)
	lease := m.claimed(&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: m.s.Namespace, Name: leaseName(m.s.Ring, member)}}, now)
	lease.Spec.AcquireTime = &now
	if err := m.c.Create(ctx, lease); err != nil {
		// An earlier attempt that succeeded unanswered is found by the
		// next attempt's list, with this incarnation in it.
		return fmt.Errorf("create the Lease %s/%s: %w", m.s.Namespace, lease.Name, err)
	}
	m.joinedAs(member, lease, begin)
	m.s.Logger.Info("Joined the ring.", "ring", m.s.Ring, "member", member, "lease", lease.Name)
	return nil
}

// joinedAs records the member's name and its first write of the Lease.
func (m *Member) joinedAs(member string, lease *coordinationv1.Lease, begin time.Time) {
	m.mu.Lock()
	m.name = member
	m.mu.Unlock()
	m.renewed(lease, begin)
}

// claimed writes into a Lease everything that makes it this process's:
// the ring's label, the holder, the incarnation, the lease duration and a
// fresh renew time. A renewal that finds these edited by hand puts them
// back.
func (m *Member) claimed(lease *coordinationv1.Lease, now metav1.MicroTime) *coordinationv1.Lease {
	if lease.Labels == nil {
		lease.Labels = map[string]string{}
	}
	lease.Labels[RingLabel] = m.s.Ring
	if lease.Annotations == nil {
		lease.Annotations = map[string]string{}
	}
	lease.Annotations[IncarnationAnnotation] = m.incarnation
	delete(lease.Annotations, ReleasedAnnotation)
	delete(lease.Annotations, StoppingAnnotation) // an earlier run's stop
	lease.Annotations[RulesAnnotation] = RuleStopsHold
	lease.Spec.HolderIdentity = ptr.To(m.s.Identity)
	lease.Spec.LeaseDurationSeconds = ptr.To(leaseSeconds(m.s.LeaseDuration))
	lease.Spec.RenewTime = &now
	return lease
}

// ours reports whether a Lease as read is still this process's.
func (m *Member) ours(lease *coordinationv1.Lease) bool {
	return !Released(lease) && ptr.Deref(lease.Spec.HolderIdentity, "") == m.s.Identity &&
		lease.Annotations[IncarnationAnnotation] == m.incarnation
}

// renew writes the Lease with a fresh renew time, begun at begin. Each
// attempt is bounded by the fence, past which it could not help: a slow
// API server is given all the time there is (as leader election gives
// its renewals the renew deadline), and a hanging one cannot hold the
// member past its fence. A Lease that changed under the member is read
// again: if it is still the member's (a hand edit of something else), the
// member's fields are put back; if not, the membership is lost.
//
// Once the replica's stop has begun (BeginStop), the renewal marks the
// Lease as stopping, with the time the mark was first written.
func (m *Member) renew(ctx context.Context, begin time.Time) error {
	// The bound is a timeout by the member's clock, not a deadline: the
	// clock may not be the real one.
	ctx, cancel := context.WithTimeout(ctx, m.Tenure().FenceAt().Sub(m.s.Clock.Now()))
	defer cancel()
	var stopping bool
	var since string
	mine := func(lease *coordinationv1.Lease) *coordinationv1.Lease {
		lease = m.claimed(lease, metav1.NewMicroTime(begin))
		if stopping {
			lease.Annotations[StoppingAnnotation] = cmp.Or(since, begin.UTC().Format(time.RFC3339Nano))
		}
		return lease
	}
	m.mu.Lock()
	stopping, since = m.stopping, m.lease.Annotations[StoppingAnnotation]
	lease := mine(m.lease.DeepCopy())
	m.mu.Unlock()
	err := m.c.Update(ctx, lease)
	if apierrors.IsConflict(err) {
		fresh := &coordinationv1.Lease{}
		if err = m.c.Get(ctx, client.ObjectKeyFromObject(lease), fresh); err == nil {
			if !m.ours(fresh) {
				return ErrLeaseTaken
			}
			lease = mine(fresh)
			err = m.c.Update(ctx, lease)
		}
	}
	switch {
	case apierrors.IsNotFound(err):
		return ErrLeaseDeleted
	case err != nil:
		return fmt.Errorf("renew the Lease %s/%s: %w", m.s.Namespace, lease.Name, err)
	}
	m.renewed(lease, begin)
	return nil
}

// release marks the Lease as released by its member, guarded by the
// resourceVersion last written, so that a Lease that is not this
// process's any more is left alone. The mark is what lets the ring move
// the objects at once. The Lease stays for a lease duration, so that an
// assigner that starts meanwhile learns that the member left rather than
// wonder whether it still works; the assigner deletes it then.
//
// A Lease that changed since the member last wrote it (a renewal that
// succeeded while its caller gave up on it, say) is read again, and
// released if it is still the member's; one that is someone else's now
// is left alone.
func (m *Member) release(ctx context.Context, lease *coordinationv1.Lease) error {
	for attempt := 0; ; attempt++ {
		lease = lease.DeepCopy()
		lease.Annotations[ReleasedAnnotation] = m.s.Clock.Now().UTC().Format(time.RFC3339Nano)
		lease.Spec.HolderIdentity = nil // leader election's sign of a free Lease, for the tools that show it
		err := m.c.Update(ctx, lease)
		switch {
		case err == nil, apierrors.IsNotFound(err):
			return nil // or deleted meanwhile: the ring waits for it to expire
		case !apierrors.IsConflict(err) || attempt >= 2:
			return fmt.Errorf("release the Lease %s/%s: %w", m.s.Namespace, lease.Name, err)
		}
		fresh := &coordinationv1.Lease{}
		if err := m.c.Get(ctx, client.ObjectKeyFromObject(lease), fresh); err != nil {
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("read the Lease %s/%s again: %w", m.s.Namespace, lease.Name, err)
		}
		if !m.ours(fresh) {
			return nil // taken over or released: not this member's to release
		}
		lease = fresh
	}
}

// renewTime is when a Lease was last renewed; the zero time if never.
func renewTime(lease *coordinationv1.Lease) time.Time {
	if lease.Spec.RenewTime == nil {
		return time.Time{}
	}
	return lease.Spec.RenewTime.Time
}
