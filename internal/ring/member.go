// Package ring is a replica's membership in a ring of operator replicas
// that share objects (sharding.md): the member's own Lease, renewed while
// the replica runs, given up when it stops, and a fence when it cannot be
// renewed in time.
package ring

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/internal/keys"
	"github.com/kopf-go/kopf/internal/sharding"
)

// RingLabel labels every member's Lease with the member's ring, so that
// members and the assigner find a ring's Leases by one selector.
const RingLabel = keys.ShardPrefix + "/ring"

// Defaults of Settings: leader election's, with the same meaning.
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRenewPeriod   = 5 * time.Second
)

// leaveTimeout bounds the deletion of the Lease when the member stops: the
// stop has cancelled the context already.
const leaveTimeout = 10 * time.Second

// ErrMembershipLost is what a member returns once it could not renew its
// Lease within the renew deadline: it must stop handling objects, because
// others will count it dead and take them over.
var ErrMembershipLost = errors.New("shard membership lost: the Lease was not renewed within the renew deadline")

// ErrLeaseDeleted is what a member returns when its Lease was deleted
// under it (by hand, say): others count a deleted Lease as a member that
// left, and take its objects over at once, so it must stop at once too.
var ErrLeaseDeleted = fmt.Errorf("%w: the Lease was deleted by someone else", ErrMembershipLost)

// Settings of a member; zero durations mean the defaults.
type Settings struct {
	// Ring names the ring; Namespace holds its Leases; Identity is the
	// replica's identity (its peering identity).
	Ring, Namespace, Identity string
	// LeaseDuration: how long others count the member live after a
	// renewal. RenewDeadline: how long the member goes on without a
	// successful renewal before it fences itself. RenewPeriod: how often
	// it renews.
	LeaseDuration, RenewDeadline, RenewPeriod time.Duration
	Clock                                     clock.WithTicker
	Logger                                    logr.Logger
}

// withDefaults fills the zero values and checks the settings.
func (s Settings) withDefaults() (Settings, error) {
	if s.Ring == "" || s.Namespace == "" || s.Identity == "" {
		return s, errors.New("a ring member needs a ring, a namespace and an identity")
	}
	if err := ValidateRing(s.Ring); err != nil {
		return s, err
	}
	var err error
	if s.LeaseDuration, s.RenewDeadline, s.RenewPeriod, err = durations(s.LeaseDuration, s.RenewDeadline, s.RenewPeriod); err != nil {
		return s, err
	}
	if s.Clock == nil {
		s.Clock = clock.RealClock{}
	}
	return s, nil
}

// durations fills zero durations with the defaults and checks that they
// nest: a member must renew several times per deadline, and fence itself
// before others count it dead.
func durations(lease, deadline, period time.Duration) (time.Duration, time.Duration, time.Duration, error) {
	if lease == 0 {
		lease = DefaultLeaseDuration
	}
	if deadline == 0 {
		deadline = DefaultRenewDeadline
	}
	if period == 0 {
		period = DefaultRenewPeriod
	}
	if !(period < deadline && deadline < lease) {
		return lease, deadline, period, fmt.Errorf("ring durations must nest: renew period %s < renew deadline %s < lease duration %s",
			period, deadline, lease)
	}
	return lease, deadline, period, nil
}

// Member is a manager Runnable that holds the replica's Lease in its ring.
type Member struct {
	c      client.Client
	s      Settings
	name   string
	fenced chan struct{}
	// lease is the Lease as last written, so that a renewal is one update.
	lease *coordinationv1.Lease
	// joined: the Lease was written once; from then on, a missing Lease
	// means someone deleted it, not that there is none yet.
	joined bool
	// writable is WritableUntil, in Unix nanoseconds; 0 before joining.
	writable atomic.Int64
}

// WritableUntil is the moment until which no other member can have taken
// this member's objects over: a lease duration after the start of its
// last successful renewal, by its own clock. The zero time before it has
// joined. Writes to objects must end before it (sharding.md, "The
// guarantee"): a write delayed past it could land after another member
// has started on the object.
func (m *Member) WritableUntil() time.Time {
	if n := m.writable.Load(); n != 0 {
		return time.Unix(0, n)
	}
	return time.Time{}
}

// NewMember prepares the membership; c writes the Lease.
func NewMember(c client.Client, s Settings) (*Member, error) {
	s, err := s.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Member{c: c, s: s, name: sharding.MemberName(s.Identity), fenced: make(chan struct{})}, nil
}

// Name is the member's name in owner labels.
func (m *Member) Name() string { return m.name }

// LeaseName is the name of the member's Lease.
func (m *Member) LeaseName() string { return leaseName(m.s.Ring, m.name) }

// Fenced is closed once the member has lost its membership.
func (m *Member) Fenced() <-chan struct{} { return m.fenced }

// Start renews the Lease every renew period until ctx ends, then deletes
// it, so that the ring moves the member's objects at once. If no renewal
// succeeds for the renew deadline, it closes Fenced and returns
// ErrMembershipLost, leaving the Lease to expire: the member's handlers
// may still be stopping, and others must not start before they have. If
// the Lease was deleted under it, it does the same at once
// (ErrLeaseDeleted).
func (m *Member) Start(ctx context.Context) error {
	ticker := m.s.Clock.NewTicker(m.s.RenewPeriod)
	defer ticker.Stop()
	last := m.s.Clock.Now() // the deadline of the first renewal counts from the start
	for {
		begin := m.s.Clock.Now()
		err := m.renew(ctx)
		switch {
		case err == nil:
			last = m.s.Clock.Now()
			// Others count the member live for a lease duration from when
			// they see this renewal, which is after it was sent.
			m.writable.Store(begin.Add(m.s.LeaseDuration).UnixNano())
		case ctx.Err() != nil:
			return m.leave(ctx)
		case errors.Is(err, ErrLeaseDeleted):
			return m.fence(err, last)
		default:
			m.s.Logger.Error(err, "The ring's Lease could not be renewed.", "lease", m.LeaseName())
		}
		if sharding.Fenced(last, m.s.Clock.Now(), m.s.RenewDeadline) {
			return m.fence(ErrMembershipLost, last)
		}
		select {
		case <-ctx.Done():
			return m.leave(ctx)
		case <-ticker.C():
		}
	}
}

// fence closes Fenced and says why the member stops handling objects.
func (m *Member) fence(err error, lastRenewal time.Time) error {
	close(m.fenced)
	m.s.Logger.Error(err, "This replica stops handling objects: others will take them over.",
		"lease", m.LeaseName(), "lastRenewal", lastRenewal)
	return err
}

// NeedLeaderElection is false: every replica is a member.
func (m *Member) NeedLeaderElection() bool { return false }

// renew writes the Lease with a fresh renew time, creating it the first
// time; each attempt is bounded by the renew period, so that a hanging
// API server cannot hold the member past its deadline unnoticed.
func (m *Member) renew(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, m.s.RenewPeriod)
	defer cancel()
	now := metav1.NewMicroTime(m.s.Clock.Now())
	if m.lease == nil {
		return m.create(ctx, now)
	}
	lease := m.lease.DeepCopy()
	lease.Spec.RenewTime = &now
	if err := m.c.Update(ctx, lease); err != nil {
		if apierrors.IsNotFound(err) {
			return ErrLeaseDeleted
		}
		if apierrors.IsConflict(err) {
			m.lease = nil // read afresh next time
		}
		return fmt.Errorf("renew the Lease %s/%s: %w", m.s.Namespace, m.LeaseName(), err)
	}
	m.lease = lease
	return nil
}

// create writes the member's Lease, or takes over one left by an earlier
// run of the same identity.
func (m *Member) create(ctx context.Context, now metav1.MicroTime) error {
	lease := &coordinationv1.Lease{}
	err := m.c.Get(ctx, client.ObjectKey{Namespace: m.s.Namespace, Name: m.LeaseName()}, lease)
	switch {
	case apierrors.IsNotFound(err) && m.joined:
		return ErrLeaseDeleted
	case apierrors.IsNotFound(err):
		lease = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{
			Namespace: m.s.Namespace, Name: m.LeaseName(), Labels: map[string]string{RingLabel: m.s.Ring},
		}}
	case err != nil:
		return fmt.Errorf("read the Lease %s/%s: %w", m.s.Namespace, m.LeaseName(), err)
	}
	lease.Spec.HolderIdentity = ptr.To(m.s.Identity)
	lease.Spec.LeaseDurationSeconds = ptr.To(int32(m.s.LeaseDuration.Round(time.Second) / time.Second))
	lease.Spec.AcquireTime = &now
	lease.Spec.RenewTime = &now
	if lease.ResourceVersion == "" {
		err = m.c.Create(ctx, lease)
	} else {
		err = m.c.Update(ctx, lease)
	}
	if err != nil {
		return fmt.Errorf("write the Lease %s/%s: %w", m.s.Namespace, m.LeaseName(), err)
	}
	m.lease, m.joined = lease, true
	m.s.Logger.Info("Joined the ring.", "ring", m.s.Ring, "member", m.name, "lease", m.LeaseName())
	return nil
}

// leave deletes the Lease after a graceful stop.
func (m *Member) leave(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), leaveTimeout)
	defer cancel()
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: m.s.Namespace, Name: m.LeaseName()}}
	if err := m.c.Delete(ctx, lease); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("leave the ring: delete the Lease %s/%s: %w", m.s.Namespace, m.LeaseName(), err)
	}
	m.s.Logger.Info("Left the ring.", "ring", m.s.Ring, "member", m.name)
	return nil
}
