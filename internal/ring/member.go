// Package ring is a replica's membership in a ring of operator replicas
// that share objects (sharding.md): the member's own Lease, renewed while
// the replica runs, released when it has stopped, and a fence when it
// cannot be renewed in time; and the ring's assigner.
package ring

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/internal/jitter"
	"github.com/kopf-go/kopf/internal/sharding"
)

// Defaults of Settings: leader election's, with the same meaning.
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRenewPeriod   = 5 * time.Second
)

// ErrMembershipLost is what a member returns once it stops handling
// objects without a graceful stop: others will count it dead, or have
// counted it so, and take its objects over.
var ErrMembershipLost = errors.New("shard membership lost")

// Why a member lost its membership; each is a kind of ErrMembershipLost.
var (
	// ErrRenewDeadline: no renewal succeeded within the renew deadline.
	ErrRenewDeadline = fmt.Errorf("%w: the Lease was not renewed within the renew deadline", ErrMembershipLost)
	// ErrLeaseDeleted: someone deleted the member's Lease. The ring counts
	// it live until its lease duration has run out, so that the member
	// can stop first; it must not write a new one.
	ErrLeaseDeleted = fmt.Errorf("%w: the Lease was deleted by someone else", ErrMembershipLost)
	// ErrLeaseTaken: the member's Lease was released or taken over by
	// someone else (another process with the same identity, or a hand
	// edit): it is not this process's any more.
	ErrLeaseTaken = fmt.Errorf("%w: the Lease was released or taken over by someone else", ErrMembershipLost)
)

// Settings of a member; zero durations mean the defaults.
type Settings struct {
	// Ring names the ring; Namespace holds its Leases; Identity is the
	// replica's identity (its peering identity).
	Ring, Namespace, Identity string
	// Durations: see Durations.
	Durations
	Clock  clock.WithTicker
	Logger logr.Logger
	// Jitter is added to the retries of a failed join or renewal, so that
	// the replicas that one outage of the API server failed do not all
	// retry at the same moments; its zero value is jitter.Default().
	Jitter jitter.Jitter
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
	if s.Durations, err = s.Durations.Resolved(); err != nil {
		return s, err
	}
	if s.Clock == nil {
		s.Clock = clock.RealClock{}
	}
	if s.Jitter.Fraction == 0 && s.Jitter.Rand == nil {
		s.Jitter = jitter.Default()
	}
	return s, nil
}

// Durations are a ring's three durations, as leader election's, declared
// here once for the members, the assigner and the engine. LeaseDuration:
// how long others count a member live after a renewal. RenewDeadline: how
// long a member goes on without a successful renewal before it fences
// itself. RenewPeriod: how often it renews. Zero values are the defaults.
type Durations struct {
	LeaseDuration, RenewDeadline, RenewPeriod time.Duration

	// resolved: Resolved has filled and checked them; the member and the
	// assigner then take them as they are.
	resolved bool
}

// Resolved fills the zero durations with the defaults and checks that they
// nest: a member must renew several times per deadline, and fence itself
// before others count it dead. Durations it has resolved are taken as they
// are: the engine resolves them once for the member and the assigner.
func (d Durations) Resolved() (Durations, error) {
	if d.resolved {
		return d, nil
	}
	d.LeaseDuration = cmp.Or(d.LeaseDuration, DefaultLeaseDuration)
	d.RenewDeadline = cmp.Or(d.RenewDeadline, DefaultRenewDeadline)
	d.RenewPeriod = cmp.Or(d.RenewPeriod, DefaultRenewPeriod)
	if !(d.RenewPeriod < d.RenewDeadline && d.RenewDeadline < d.LeaseDuration) {
		return d, fmt.Errorf("ring durations must nest: renew period %s < renew deadline %s < lease duration %s",
			d.RenewPeriod, d.RenewDeadline, d.LeaseDuration)
	}
	d.resolved = true
	return d, nil
}

// retryPeriod is how soon a failed join or renewal is tried again: a
// fifth of the renew period (1 s by default), so that a blip of the API
// server costs a second rather than half the renew deadline; its jitter
// (up to half of it more) comes on top, which keeps it well within the
// deadline.
func retryPeriod(renewPeriod time.Duration) time.Duration { return renewPeriod / 5 }

// retryAfter is how long the member waits before it tries a failed join
// or renewal again: the retry period with its jitter.
func (m *Member) retryAfter() time.Duration { return m.s.Jitter.Apply(retryPeriod(m.s.RenewPeriod)) }

// Member is a manager Runnable that holds the replica's Lease in its ring.
type Member struct {
	c client.Client
	s Settings
	// incarnation tells this process's hold on a Lease from any other's
	// with the same identity.
	incarnation string
	joined      chan struct{}
	fenced      chan struct{}

	mu sync.Mutex
	// name is the member's name, known once joined.
	name string
	// lease is the Lease as last written, so that a renewal is one update.
	lease *coordinationv1.Lease
	// tenure counts from the start of the last successful renewal.
	tenure sharding.Tenure
	// isFenced: the member lost its membership; it never releases then.
	isFenced bool
	// stopping: the replica's graceful stop has begun (BeginStop); every
	// renewal from then on marks the Lease so.
	stopping bool
	// stopBegun is closed by BeginStop: renew now, with the mark.
	stopBegun chan struct{}
	stopOnce  sync.Once
}

// NewMember prepares the membership; c writes the Lease.
func NewMember(c client.Client, s Settings) (*Member, error) {
	s, err := s.withDefaults()
	if err != nil {
		return nil, err
	}
	random := make([]byte, 8)
	if _, err := rand.Read(random); err != nil {
		return nil, fmt.Errorf("draw the member's incarnation: %w", err)
	}
	return &Member{c: c, s: s, incarnation: hex.EncodeToString(random), joined: make(chan struct{}), fenced: make(chan struct{}), stopBegun: make(chan struct{}),
		tenure: sharding.Tenure{RenewDeadline: s.RenewDeadline, LeaseDuration: s.LeaseDuration}}, nil
}

// Joined is closed once the member holds its Lease; Name is known then.
func (m *Member) Joined() <-chan struct{} { return m.joined }

// Fenced is closed once the member has lost its membership.
func (m *Member) Fenced() <-chan struct{} { return m.fenced }

// Name is the member's name in owner labels; "" before it has joined.
func (m *Member) Name() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.name
}

// LeaseName is the name of the member's Lease; "" before it has joined.
func (m *Member) LeaseName() string {
	if name := m.Name(); name != "" {
		return leaseName(m.s.Ring, name)
	}
	return ""
}

// Tenure is the member's hold on its Lease as it counts it: when it must
// have stopped, and until when it may write (sharding.md, "The
// guarantee"). The zero Renewed before it has joined.
func (m *Member) Tenure() sharding.Tenure {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.tenure
}

// NeedLeaderElection is false: every replica is a member.
func (m *Member) NeedLeaderElection() bool { return false }

// Start joins the ring and renews the Lease every renew period until ctx
// ends; then it returns nil and leaves the Lease as it is (Release gives
// it up once the member's work has stopped). If no renewal succeeds
// within the renew deadline after the start of the last successful one,
// a timer of its own fences the member: Fenced closes and Start returns
// ErrRenewDeadline, leaving the Lease to expire. A Lease deleted or taken
// over under the member fences it at once (ErrLeaseDeleted,
// ErrLeaseTaken).
func (m *Member) Start(ctx context.Context) error {
	if !m.join(ctx) {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	var renewing sync.WaitGroup
	defer renewing.Wait()
	defer cancel()
	results := make(chan renewal, 1)
	now := m.s.Clock.Now()
	fence := m.s.Clock.NewTimer(m.Tenure().FenceAt().Sub(now))
	defer fence.Stop()
	next := m.s.Clock.NewTimer(m.Tenure().Renewed.Add(m.s.RenewPeriod).Sub(now))
	defer next.Stop()
	// One renewal at a time: inFlight while one runs; soon asks for the
	// next at once when it returns (the stop began meanwhile).
	inFlight, soon := false, false
	stopBegun := m.stopBegun
	renew := func() {
		inFlight = true
		begin := m.s.Clock.Now()
		renewing.Go(func() { results <- renewal{begin: begin, err: m.renew(ctx, begin)} })
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-fence.C():
			return m.fence(ErrRenewDeadline)
		case <-stopBegun:
			stopBegun = nil
			if inFlight {
				soon = true
			} else {
				next.Stop()
				renew()
			}
		case <-next.C():
			renew()
		case r := <-results:
			inFlight = false
			now := m.s.Clock.Now()
			switch {
			case r.err == nil && soon:
				soon = false
				fence.Reset(m.Tenure().FenceAt().Sub(now))
				renew()
			case r.err == nil:
				fence.Reset(m.Tenure().FenceAt().Sub(now))
				next.Reset(r.begin.Add(m.s.RenewPeriod).Sub(now))
			case errors.Is(r.err, ErrMembershipLost):
				return m.fence(r.err)
			default:
				if ctx.Err() == nil {
					m.s.Logger.Error(r.err, "The ring's Lease could not be renewed; trying again.", "lease", m.LeaseName(),
						"fenceAt", m.Tenure().FenceAt())
				}
				next.Reset(m.retryAfter())
			}
		}
	}
}

// BeginStop tells the ring, as the replica's graceful stop begins, that
// the member takes nothing new: it renews its Lease at once, and at every
// renewal until it stops, marked as stopping. The member keeps what it
// holds until it releases its Lease or the Lease expires; without the
// mark, the assigner would go on placing new objects on it, and other
// members handing objects over to it, and those would wait for it to be
// gone (docs/sharding.md, "Leaving"). A mark that cannot be written
// costs only that wait.
func (m *Member) BeginStop() {
	m.stopOnce.Do(func() {
		m.mu.Lock()
		m.stopping = true
		m.mu.Unlock()
		close(m.stopBegun)
		m.s.Logger.V(1).Info("This member stops: the ring is told, and places nothing new on it.", "lease", m.LeaseName())
	})
}

// renewal is the outcome of one renewal begun at begin.
type renewal struct {
	begin time.Time
	err   error
}

// join takes the Lease over or creates it, trying again every retry
// period until it succeeds (true) or ctx ends (false).
func (m *Member) join(ctx context.Context) bool {
	for {
		begin := m.s.Clock.Now()
		err := m.tryJoin(ctx, begin)
		if err == nil {
			close(m.joined)
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		m.s.Logger.Error(err, "Could not join the ring; trying again.", "ring", m.s.Ring)
		select {
		case <-ctx.Done():
			return false
		case <-m.s.Clock.After(m.retryAfter()):
		}
	}
}

// renewed records a successful write of the Lease begun at begin.
func (m *Member) renewed(lease *coordinationv1.Lease, begin time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lease = lease
	if begin.After(m.tenure.Renewed) {
		m.tenure.Renewed = begin
	}
}

// fence closes Fenced and says why the member stops handling objects.
func (m *Member) fence(err error) error {
	m.mu.Lock()
	m.isFenced = true
	m.mu.Unlock()
	close(m.fenced)
	t := m.Tenure()
	m.s.Logger.Error(err, "This replica stops handling objects at once: others may take them over from the end of its lease.",
		"lease", m.LeaseName(), "lastRenewal", t.Renewed, "leaseEnds", t.WritableUntil())
	return err
}

// Release gives the Lease up after a graceful stop, once nothing of the
// member's work may still run: the ring then moves its objects at once.
// The release is written into the Lease (only the member writes it; a
// Lease deleted by someone else is not a release), and the Lease is then
// deleted. A member that was fenced, or never joined, releases nothing:
// its Lease must expire.
func (m *Member) Release(ctx context.Context) error {
	m.mu.Lock()
	lease, fenced := m.lease, m.isFenced
	m.mu.Unlock()
	if lease == nil || fenced {
		return nil
	}
	if err := m.release(ctx, lease); err != nil {
		return fmt.Errorf("leave the ring: %w", err)
	}
	m.s.Logger.Info("Left the ring.", "ring", m.s.Ring, "member", m.Name())
	return nil
}
