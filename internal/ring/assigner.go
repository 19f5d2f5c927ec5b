package ring

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	coordinationclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/kopf-go/kopf/internal/scopes"
	"github.com/kopf-go/kopf/internal/sharding"
)

// AssignerSettings are the settings of a ring's assigner; zero durations
// mean the defaults of Settings.
type AssignerSettings struct {
	// Ring names the ring; Namespace holds its Leases; Identity is the
	// replica's identity, the candidate's in the assigner's election.
	Ring, Namespace, Identity string
	// Durations serve the assigner's own election, as leader election's
	// settings, and LeaseDuration tells how long a member stays live after
	// the assigner last saw its Lease renewed, unless the member declares
	// its own.
	Durations
	// Kinds are the sharded kinds.
	Kinds []schema.GroupVersionKind
	// Finalizer, if set, is the operator's finalizer, which a placement
	// gives to the objects of the kinds of Kinds that Finalized names:
	// those that handlers or daemons work on, whose names the ring keeps
	// taken while a replica works on one (docs/sharding.md, "One object,
	// one name").
	Finalizer string
	Finalized []schema.GroupVersionKind
	// Workers is how many objects the assigner writes at once (default
	// DefaultAssignerWorkers).
	Workers int
	// Namespaces are the served namespaces; none: the whole cluster.
	Namespaces []string
	// Served, if set, are served namespaces that change at runtime; it
	// replaces Namespaces, and the assigner watches each namespace's
	// objects while it is served.
	Served *scopes.Served
	// Clock times the members' liveness and the assigner's election
	// (real by default).
	Clock  clock.WithTicker
	Logger logr.Logger
	// OnMembers, if set, is told the live members whenever they change
	// while this replica is the assigner, and none when it stops being
	// the assigner.
	OnMembers func(live []string)
	// OnEpoch, if set, is told the epoch that the ring's assigner
	// published (this replica or another) whenever this replica sees it:
	// every member hands over the objects that hash to another member.
	OnEpoch func(sharding.Epoch)
	// OnSilent, if set, is told, once each time the epoch lists it so,
	// of a live member whose Lease the assigner has seen go unrenewed for
	// one and a half renew periods: it may be dead, and its objects then
	// move at the end of its lease duration.
	OnSilent func(member string)
	// Member, if set, is this replica's member's name ("" until it has
	// joined): the replica follows the ring's Leases and campaigns only
	// while the epoch names it a candidate (sharding.md, "Candidates").
	// An assigner without one (apart from the members) always does.
	Member func() string
	// Candidates is how many members are candidates (default
	// DefaultCandidates).
	Candidates int
}

// finalizerOf is the finalizer that a placement of an object of the kind
// (an index into Kinds) adds; "" if none.
func (s AssignerSettings) finalizerOf(kind int) string {
	if kind < len(s.Kinds) && slices.Contains(s.Finalized, s.Kinds[kind]) {
		return s.Finalizer
	}
	return ""
}

// withDefaults fills the zero values and checks the settings.
func (s AssignerSettings) withDefaults() (AssignerSettings, error) {
	if s.Ring == "" || s.Namespace == "" || s.Identity == "" {
		return s, errors.New("a ring's assigner needs a ring, a namespace and an identity")
	}
	if err := ValidateRing(s.Ring); err != nil {
		return s, err
	}
	if len(s.Kinds) == 0 {
		return s, errors.New("a ring's assigner needs the kinds it shards")
	}
	switch {
	case s.Candidates < 0:
		return s, fmt.Errorf("a ring's candidates must not be negative, not %d", s.Candidates)
	case s.Candidates == 0:
		s.Candidates = DefaultCandidates
	}
	switch {
	case s.Workers < 0:
		return s, fmt.Errorf("the assigner's workers must not be negative, not %d", s.Workers)
	case s.Workers == 0:
		s.Workers = DefaultAssignerWorkers
	}
	var err error
	if s.Durations, err = s.Durations.Resolved(); err != nil {
		return s, err
	}
	if s.Clock == nil {
		s.Clock = clock.RealClock{}
	}
	s.Logger = s.Logger.WithValues("ring", s.Ring)
	return s, nil
}

// DefaultCandidates is how many members follow the ring's Leases and
// campaign to be its assigner (sharding.Epoch.Candidates): the assigner
// and two that know at once, should it die, how long each member has
// gone without renewing.
const DefaultCandidates = 3

// DefaultAssignerWorkers is how many objects the assigner writes at once
// by default: a write is one small patch, and a rebalance or a takeover
// of thousands of objects should be bound by the API server, not by
// round trips one after another.
const DefaultAssignerWorkers = 16

// electionRetry is how often the assigner renews its election Lease: a
// fifth of a member's renew period (1 s by default). A candidate tries to
// take over at the moment the record it saw last expires, as its watch
// shows it, and reads the Lease only every renew period besides, which
// bounds how late it learns of a release when its watch is stuck. The
// price is one Lease write a retry period from the assigner, and one read
// a renew period from every other candidate.
func electionRetry(renewPeriod time.Duration) time.Duration { return renewPeriod / 5 }

// Assigner is a manager Runnable that every replica of a ring runs: it
// campaigns to be the ring's assigner, and while it is, gives objects
// owners and asks owners for handovers (sharding.md, "The assigner").
type Assigner struct {
	s      AssignerSettings
	keys   Keys
	mapper meta.RESTMapper
	// objects reads and writes the kinds' objects as metadata only: the
	// assigner keeps no copy of them (sharding.md, "The assigner").
	objects metadata.Interface
	leases  coordinationclient.CoordinationV1Interface
	// election serves the assigner's election alone, with a client-side
	// rate limiter of its own: a term's reads and deletions of other
	// Leases (another ring's members, a whole ring's dead) must not hold
	// a renewal back past the renew deadline.
	election coordinationclient.LeaseInterface
	// foreign judges other rings' members, whose objects are not placed
	// while they are live (foreign.go).
	foreign *foreignLeases
}

// NewAssigner prepares a ring's assigner. httpClient and mapper are the
// manager's; nil ones are made from cfg.
func NewAssigner(cfg *rest.Config, httpClient *http.Client, mapper meta.RESTMapper, s AssignerSettings) (*Assigner, error) {
	s, err := s.withDefaults()
	if err != nil {
		return nil, err
	}
	if httpClient == nil {
		if httpClient, err = rest.HTTPClientFor(cfg); err != nil {
			return nil, fmt.Errorf("make the assigner's HTTP client: %w", err)
		}
	}
	if mapper == nil {
		if mapper, err = apiutil.NewDynamicRESTMapper(cfg, httpClient); err != nil {
			return nil, fmt.Errorf("make the assigner's REST mapper: %w", err)
		}
	}
	a := &Assigner{s: s, keys: KeysOf(s.Namespace, s.Ring), mapper: mapper}
	if a.objects, err = metadata.NewForConfigAndClient(cfg, httpClient); err != nil {
		return nil, fmt.Errorf("make the assigner's metadata client: %w", err)
	}
	if a.leases, err = coordinationclient.NewForConfigAndClient(cfg, httpClient); err != nil {
		return nil, fmt.Errorf("make the assigner's Lease client: %w", err)
	}
	own := rest.CopyConfig(cfg)
	own.RateLimiter = nil // QPS and Burst make one for this client alone
	election, err := coordinationclient.NewForConfigAndClient(own, httpClient)
	if err != nil {
		return nil, fmt.Errorf("make the assigner's election client: %w", err)
	}
	a.election = election.Leases(s.Namespace)
	a.foreign = newForeignLeases(func(ns string) leaseAPI { return a.leases.Leases(ns) }, s.Clock, s.Durations)
	return a, nil
}

// NeedLeaderElection is false: replicas campaign in the ring's own
// election rather than the manager's.
func (a *Assigner) NeedLeaderElection() bool { return false }

// member is this replica's member's name; "" if none or not joined yet.
func (a *Assigner) member() string {
	if a.s.Member == nil {
		return ""
	}
	return a.s.Member()
}

// Start watches the ring's epoch and election until ctx ends, and stands
// as a candidate whenever the replica is one: it follows the ring's
// Leases, campaigns, and assigns whenever it wins. It returns nil once
// everything it started has stopped.
func (a *Assigner) Start(ctx context.Context) error {
	o, err := a.newObserver()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	var observing sync.WaitGroup
	observing.Go(func() { o.run(ctx) })
	defer observing.Wait()
	defer cancel()
	for o.await(ctx, true) {
		a.stand(ctx, o)
	}
	return nil
}

// stand is one candidacy: it follows the ring's Leases and campaigns
// until ctx ends, or until the replica is no candidate any more while it
// does not lead. A term that fails to start is logged and tried again
// after a lease duration.
func (a *Assigner) stand(ctx context.Context, o *observer) {
	f, err := a.newFollower()
	if err != nil {
		a.s.Logger.Error(err, "This replica cannot follow the ring's Leases; it does not campaign.")
		return
	}
	a.s.Logger.V(1).Info("This replica is a candidate: it follows the ring's Leases and campaigns to be the assigner.")
	defer func(parent context.Context) {
		if parent.Err() == nil {
			a.s.Logger.V(1).Info("This replica is no candidate any more: it watches the ring's epoch and election alone.")
		}
	}(ctx)
	ctx, cancel := context.WithCancel(ctx)
	var following sync.WaitGroup
	following.Go(func() { f.run(ctx) })
	defer following.Wait()
	defer cancel()
	for ctx.Err() == nil {
		err := a.candidacy(ctx, o, f)
		if is, _ := o.candidate(a.member(), a.s.Clock.Now()); !is || ctx.Err() != nil {
			return
		}
		if err == nil {
			continue
		}
		a.s.Logger.Error(err, "The ring's assigner stopped; it campaigns again after a lease duration.")
		select {
		case <-ctx.Done():
		case <-a.s.Clock.After(a.s.LeaseDuration):
		}
	}
}

// candidacy runs one campaign, which ends early if the replica stops
// being a candidate before it wins.
func (a *Assigner) candidacy(ctx context.Context, o *observer, f *follower) error {
	watching, stop := context.WithCancel(ctx)
	resigned := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		if o.await(watching, false) {
			close(resigned)
		}
	})
	defer wg.Wait()
	defer stop()
	return a.campaign(ctx, f, o, resigned)
}

// campaign runs one election until this replica has led and lost, or ctx
// ends, or resigned is closed before it wins. It watches the election
// record through the observer. The election runs under a
// context of its own, cancelled only after the term has stopped, so that
// the Lease is released (which lets another replica lead at once) only
// when this one writes no more.
func (a *Assigner) campaign(ctx context.Context, f *follower, o *observer, resigned <-chan struct{}) error {
	el, err := NewElector(observedElection{ElectionLeases: a.election, o: o}, a.electorConfig(o.seen()))
	if err != nil {
		return fmt.Errorf("elect the assigner: %w", err)
	}
	electing, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	// won is buffered: the elector never waits for this goroutine to
	// take the win.
	won := make(chan context.Context, 1)
	ran := make(chan struct{})
	go func() {
		defer close(ran)
		el.Run(electing, won)
	}()
	select {
	case <-ctx.Done():
	case <-resigned:
	case leading := <-won:
		err = a.lead(ctx, leading, f)
	}
	stop()
	<-ran
	return err
}

// lead runs one term until ctx ends or the leadership is lost.
func (a *Assigner) lead(ctx, leading context.Context, f *follower) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(leading, cancel)()
	a.s.Logger.Info("This replica is the ring's assigner.", "identity", a.s.Identity)
	defer a.s.Logger.Info("This replica is no longer the ring's assigner.")
	if a.s.OnMembers != nil {
		defer a.s.OnMembers(nil) // the next assigner reports them
	}
	return a.assign(ctx, f)
}

// electorConfig is the configuration of one campaign, on the assigner's
// clock.
func (a *Assigner) electorConfig(seen Observation) ElectorConfig {
	return ElectorConfig{
		Seen:          seen,
		Name:          AssignerLease(a.s.Ring),
		Identity:      a.s.Identity,
		LeaseDuration: a.s.LeaseDuration,
		RenewDeadline: a.s.RenewDeadline,
		RetryPeriod:   electionRetry(a.s.RenewPeriod),
		PollPeriod:    a.s.RenewPeriod,
		Clock:         a.s.Clock,
		Logger:        a.s.Logger.WithName("election"),
	}
}
