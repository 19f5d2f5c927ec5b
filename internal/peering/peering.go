package peering

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/kopf-go/kopf/internal/freeze"
	"github.com/kopf-go/kopf/internal/scopes"
)

// Mode is how an operator takes part in peering.
type Mode int

const (
	// ModeAuto uses the peering object named Name if the peering CRDs
	// exist; without them, or without the object, it never freezes.
	ModeAuto Mode = iota
	// ModeMandatory stays frozen until the peering object exists and
	// shows no conflict (Kopf's --peering=NAME).
	ModeMandatory
	// ModeStandalone takes no part in peering at all.
	ModeStandalone
)

// Defaults of Settings.
const (
	DefaultName     = "default"
	crdPollInterval = 10 * time.Second
)

// Settings of peering; zero values mean Kopf's defaults.
type Settings struct {
	Mode     Mode
	Name     string
	Priority int
	Lifetime time.Duration
	// Namespaces served; none means cluster-wide, which uses the
	// ClusterKopfPeering, while namespaced operators use the KopfPeering in
	// each of their namespaces.
	Namespaces []string
	// Served, if set, are served namespaces that change at runtime (from
	// patterns with globs); it replaces Namespaces, and the KopfPeering of
	// each namespace is used while it is served.
	Served *scopes.Served
	// Identity of this operator among its peers; default: Identity(false).
	Identity string
	// Ring is the shard ring this operator is a member of, if any: its
	// record says so, and members of one ring do not freeze each other.
	Ring   string
	Clock  clock.WithTicker
	Logger logr.Logger
}

// Peering is a manager Runnable that keeps this operator's record in the
// peering objects alive and freezes the operator (through the toggle)
// while a peer of higher or equal priority is alive. Freezing never stops
// peering itself.
type Peering struct {
	s      Settings
	dyn    dynamic.Interface
	disco  discovery.DiscoveryInterface
	toggle *freeze.Toggle
}

// Resolved fills the zero fields with Kopf's defaults: the one place they
// are filled (the identity's too, decided once, as the ring's membership
// names the replica by it). It is idempotent.
func (s Settings) Resolved() Settings {
	if s.Name == "" {
		s.Name = DefaultName
	}
	if s.Lifetime == 0 {
		s.Lifetime = DefaultLifetime
	}
	// Records count whole seconds; a shorter lifetime would be dead on arrival.
	s.Lifetime = max(s.Lifetime.Round(time.Second), time.Second)
	if s.Clock == nil {
		s.Clock = clock.RealClock{}
	}
	if s.Identity == "" {
		s.Identity = Identity(false, s.Clock.Now())
	}
	return s
}

// New prepares peering of the settings, resolved (Resolved); the toggle
// is what it freezes.
func New(cfg *rest.Config, s Settings, toggle *freeze.Toggle) (*Peering, error) {
	s = s.Resolved()
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("create a client for peering: %w", err)
	}
	disco, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("create a discovery client for peering: %w", err)
	}
	p := &Peering{s: s, dyn: dyn, disco: disco, toggle: toggle}
	if s.Mode == ModeMandatory && s.Served == nil {
		// Mandatory peering starts frozen: nothing runs until the peering
		// object has been seen without conflicts.
		for _, t := range p.targets() {
			toggle.Set(t.blocker(), true, fmt.Sprintf("the peering object %s has not been seen yet", t))
		}
	}
	return p, nil
}

// Identity is this operator's identity among its peers.
func (p *Peering) Identity() string { return p.s.Identity }

// NeedLeaderElection: only the replica that leads takes part in peering
// (replicas of one operator would otherwise freeze each other).
func (p *Peering) NeedLeaderElection() bool { return true }

func (p *Peering) targets() []Target { return Targets(p.s.Name, p.s.Namespaces) }

// Start runs peering until ctx is done, then removes this operator's
// records from the peering objects.
func (p *Peering) Start(ctx context.Context) error {
	if p.s.Mode == ModeStandalone {
		<-ctx.Done()
		return nil
	}
	if p.s.Served != nil {
		return p.follow(ctx, p.s.Served)
	}
	targets := p.targets()
	if !p.waitForCRD(ctx, targets[0].Resource()) {
		return nil
	}
	var wg sync.WaitGroup
	for _, t := range targets {
		p.runTarget(ctx, t, &wg)
	}
	wg.Wait()
	// Leaving: a record with no lifetime is a removal (status.<id>: null).
	leave, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	for _, t := range targets {
		p.touch(leave, t, 0)
	}
	return nil
}

// runTarget watches the target's peering object and keeps this
// operator's record in it alive until ctx is done.
func (p *Peering) runTarget(ctx context.Context, t Target, wg *sync.WaitGroup) {
	w := &watcher{p: p, t: t}
	wg.Add(2)
	go func() {
		defer wg.Done()
		w.watch(ctx)
	}()
	go func() {
		defer wg.Done()
		p.keepalive(ctx, t)
	}()
}

// waitForCRD checks that the peering CRD is served. Without it, automatic
// peering runs standalone; mandatory peering stays frozen until it comes.
func (p *Peering) waitForCRD(ctx context.Context, gvr schema.GroupVersionResource) bool {
	for {
		if p.crdServed(gvr) {
			p.toggle.Set("peering CRD", false, "")
			return true
		}
		if p.s.Mode == ModeAuto {
			p.s.Logger.Info("The peering CRDs are not in the cluster; running standalone.", "resource", gvr.String())
			<-ctx.Done()
			return false
		}
		p.toggle.Set("peering CRD", true, "the peering CRD "+gvr.Resource+"."+gvr.Group+" is missing")
		t := p.s.Clock.NewTimer(crdPollInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C():
		}
	}
}

func (p *Peering) crdServed(gvr schema.GroupVersionResource) bool {
	list, err := p.disco.ServerResourcesForGroupVersion(gvr.GroupVersion().String())
	if err != nil {
		return false
	}
	return slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == gvr.Resource })
}

// keepalive writes this operator's record now and then, a few seconds
// before it would expire, as Kopf does.
func (p *Peering) keepalive(ctx context.Context, t Target) {
	for {
		p.touch(ctx, t, p.s.Lifetime)
		timer := p.s.Clock.NewTimer(keepaliveInterval(p.s.Lifetime, 5+rand.IntN(6)))
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C():
		}
	}
}

// keepaliveInterval is how long keepalive waits between two writes of the
// record, as Kopf computes it: min(lifetime, max(1, lifetime - jitter)) in
// whole seconds, where jitter is Kopf's randint(5, 10), and never less than
// one second (Kopf's sleep(max(1, ...))), so that a lifetime under a second
// cannot make keepalive write without a pause.
func keepaliveInterval(lifetime time.Duration, jitter int) time.Duration {
	seconds := int(lifetime.Seconds())
	return time.Duration(max(1, min(seconds, max(1, seconds-jitter)))) * time.Second
}

// touch writes this operator's record with the lifetime; a zero lifetime
// removes it.
func (p *Peering) touch(ctx context.Context, t Target, lifetime time.Duration) {
	var record any
	if lifetime > 0 {
		record = Peer{Identity: p.s.Identity, Priority: p.s.Priority, Lifetime: lifetime, LastSeen: p.s.Clock.Now(), Ring: p.s.Ring}.Record()
	}
	err := p.patchStatus(ctx, t, map[string]any{p.s.Identity: record})
	result := "ok"
	switch {
	case apierrors.IsNotFound(err):
		result = "not found"
	case err != nil:
		p.s.Logger.Error(err, fmt.Sprintf("Keep-alive in %s failed.", t))
		return
	}
	p.s.Logger.V(1).Info(fmt.Sprintf("Keep-alive in %s: %s.", t, result))
}

// patchStatus merges records into the peering object's status.
func (p *Peering) patchStatus(ctx context.Context, t Target, records map[string]any) error {
	return WriteRecords(ctx, p.dyn, t, records)
}
