// Package reactor is the only wiring into controller-runtime: one
// controller per registered kind, whose reconciles it turns into Kopf's
// causes, handler runs and one patch per cycle.
package reactor

import (
	"context"
	"fmt"
	"strings"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kopf-go/kopf/internal/daemons"
	"github.com/kopf-go/kopf/internal/freeze"
	"github.com/kopf-go/kopf/internal/metrics"
	"github.com/kopf-go/kopf/internal/peering"
	"github.com/kopf-go/kopf/internal/posting"
	"github.com/kopf-go/kopf/internal/registry"
	"github.com/kopf-go/kopf/internal/ring"
	"github.com/kopf-go/kopf/internal/sharding"
)

// Setup adds the engine to the manager: the kinds' controllers (run by
// the engine itself, so that a freeze can stop their watches), the daemon
// supervisor, peering, a readiness check, and the metrics of handlers,
// daemons, objects and the frozen state (on controller-runtime's registry).
// Problems of the registration are reported here, all at once. It returns
// the prober of the probe handlers (the one behind the liveness check), so
// that another endpoint can serve the same probes, with the same memo and
// indices.
func Setup(mgr manager.Manager, reg *registry.Registry, s Settings) (*Prober, error) {
	if err := reg.Validate(); err != nil {
		return nil, fmt.Errorf("invalid handler registration: %w", err)
	}
	s = s.WithDefaults()
	if err := metrics.Register(); err != nil {
		return nil, fmt.Errorf("register the metrics: %w", err)
	}
	if s.Client == nil {
		s.Client = mgr.GetClient()
	}
	if s.Poster == nil {
		s.Poster = &posting.Poster{Client: mgr.GetClient(), Scheme: mgr.GetScheme(), Now: s.Clock.Now,
			Settings: s.Posting, Log: mgr.GetLogger().WithName("posting")}
	}
	// The identity is decided here, once: peering and the ring's
	// membership both name the replica by it.
	if s.Peering.Identity == "" {
		s.Peering.Identity = peering.Identity(false, s.Clock.Now())
	}
	s.Peering.Ring = s.Sharding.Ring
	if s.Sharding.Ring != "" && s.Sharding.Namespace == "" {
		s.Sharding.Namespace = leaseNamespace(s.Namespaces)
	}
	eng, err := newEngine(mgr, reg, s)
	if err != nil {
		return nil, err
	}
	ps := s.Peering
	ps.Namespaces, ps.Clock, ps.Logger = s.Namespaces, s.Clock, mgr.GetLogger().WithName("peering")
	peers, err := peering.New(mgr.GetConfig(), ps, eng.toggle)
	if err != nil {
		return nil, err
	}
	opMetrics := &operatorMetrics{kinds: eng.kinds, identity: peers.Identity(), toggle: eng.toggle, ring: s.Sharding.Ring}
	runnables := []manager.Runnable{s.Poster, eng.sup, eng, peers, opMetrics}
	if eng.shard != nil {
		if runnables, err = ringRunnables(mgr, eng, runnables, s); err != nil {
			return nil, err
		}
	}
	for _, r := range runnables {
		if err := mgr.Add(r); err != nil {
			return nil, fmt.Errorf("add the engine to the manager: %w", err)
		}
	}
	return addHealth(mgr, eng, peers.Identity(), reg, s)
}

// ringRunnables makes a ring member of the replica: the engine, its
// daemons, its Events and peering run on every replica, the member's
// Lease is held until they have stopped, and the assigner campaigns for
// its role.
func ringRunnables(mgr manager.Manager, eng *engine, runnables []manager.Runnable, s Settings) ([]manager.Runnable, error) {
	log := mgr.GetLogger().WithName("ring")
	// The Lease is written without the bound of the member's writes: it
	// is what extends them.
	member, err := ring.NewMember(eng.leaseClient, ring.Settings{Ring: s.Sharding.Ring, Namespace: s.Sharding.Namespace,
		Identity: s.Peering.Identity, LeaseDuration: s.Sharding.LeaseDuration, RenewDeadline: s.Sharding.RenewDeadline,
		RenewPeriod: s.Sharding.RenewPeriod, Clock: s.Clock, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("join the ring %q: %w", s.Sharding.Ring, err)
	}
	kinds := make([]schema.GroupVersionKind, len(eng.kinds))
	for i, r := range eng.kinds {
		kinds[i] = r.gvk
	}
	assigner, err := ring.NewAssigner(mgr.GetConfig(), mgr.GetHTTPClient(), eng.mapper, ring.AssignerSettings{
		Ring: s.Sharding.Ring, Namespace: s.Sharding.Namespace, Identity: s.Peering.Identity,
		LeaseDuration: s.Sharding.LeaseDuration, RenewDeadline: s.Sharding.RenewDeadline, RenewPeriod: s.Sharding.RenewPeriod,
		Kinds: kinds, Workers: s.Sharding.AssignerWorkers, Namespaces: s.Namespaces, Logger: log.WithName("assigner"),
		OnMembers: func(live []string) { metrics.ShardMembersLive(s.Sharding.Ring, len(live)) },
	})
	if err != nil {
		return nil, fmt.Errorf("assign the objects of the ring %q: %w", s.Sharding.Ring, err)
	}
	eng.shard.lease = member
	m := &membership{member: member}
	out := []manager.Runnable{m, whileThawed{Runnable: assigner, toggle: eng.toggle}}
	for _, r := range runnables {
		switch r {
		case eng, eng.sup:
			f := newFinishing(r)
			m.after = append(m.after, f)
			out = append(out, f)
		default:
			out = append(out, everyReplica{r})
		}
	}
	return out, nil
}

// newEngine makes the engine, its supervisor and its kinds' reconcilers.
func newEngine(mgr manager.Manager, reg *registry.Registry, s Settings) (*engine, error) {
	disco, err := discovery.NewDiscoveryClientForConfig(mgr.GetConfig())
	if err != nil {
		return nil, fmt.Errorf("create a discovery client: %w", err)
	}
	// Writes go straight to the API server; the manager's own cache is
	// left alone (reading through it would start informers in it).
	mapper := newMemoMapper(mgr.GetRESTMapper())
	direct, err := client.New(mgr.GetConfig(), client.Options{
		HTTPClient: mgr.GetHTTPClient(), Scheme: mgr.GetScheme(), Mapper: mapper,
	})
	if err != nil {
		return nil, fmt.Errorf("create a client: %w", err)
	}
	wrap := s.WrapClient
	if wrap == nil {
		wrap = func(c client.Client) client.Client { return c }
	}
	var sh *shard
	if s.Sharding.Ring != "" {
		sh = newShard(s.Sharding.Ring, sharding.MemberName(s.Peering.Identity))
		inner := wrap
		wrap = func(c client.Client) client.Client {
			return &leaseBound{Client: inner(c), until: sh.writableUntil, clock: s.Clock}
		}
	}
	plain := direct
	direct = wrap(direct)
	sup := daemons.New(daemons.Settings{
		ShutdownGrace:  s.ShutdownGrace,
		ReportInterval: s.ReportInterval,
		DefaultBackoff: s.DefaultBackoff,
		Clock:          s.Clock,
		Logger:         mgr.GetLogger().WithName("daemons"),
		Indices:        s.Indices,
		BaseContext:    withClient(posting.NewContext(context.Background(), s.Poster), s.Client),
		Local:          posting.Local,
		Observer:       daemonMetrics{},
	})
	eng := &engine{mgr: mgr, mapper: mapper, sup: sup, toggle: &freeze.Toggle{}, wrap: wrap, indices: s.Indices, reg: reg,
		settings: s, log: mgr.GetLogger().WithName("engine"), cacheOf: runCache(mgr, mapper, s.Namespaces, sh),
		shard: sh, leaseClient: plain}
	for _, kind := range reg.Kinds {
		gvk := kind.GVK
		if gvk.Empty() {
			gvk, err = apiutil.GVKForObject(kind.NewObject(), mgr.GetScheme())
			if err != nil {
				return nil, fmt.Errorf("find the kind of %T: %w", kind.NewObject(), err)
			}
		}
		r := newReconciler(kindObjects{kind: kind, gvk: gvk}, s, &clients{direct: direct}, discoveryProbe(disco, gvk), sup)
		r.shard = sh
		r.daemonLog = mgr.GetLogger().WithValues("controller", controllerName(gvk),
			"controllerGroup", gvk.Group, "controllerKind", gvk.Kind)
		eng.kinds = append(eng.kinds, r)
	}
	return eng, nil
}

// newReconciler makes the reconciler of one kind, and its daemons' host.
func newReconciler(objects kindObjects, s Settings, cs *clients, status *statusProbe, sup *daemons.Supervisor) *reconciler {
	label := metrics.Kind(objects.gvk)
	retrying, failed := metrics.Objects(label)
	mems := newMemories(s.Memo, retrying, failed)
	w := &writer{gvk: objects.gvk, finalizer: s.Finalizer, clients: cs, status: status, timeout: writeTimeout}
	events := make(chan event.GenericEvent, enqueueBuffer)
	return &reconciler{
		kindObjects: objects,
		kindLabel:   label,
		settings:    s,
		clients:     cs,
		writer:      w,
		throttler:   throttler{delays: s.ErrorDelays},
		memories:    mems,
		sup:         sup,
		events:      events,
		host: &kindHost{kindObjects: objects, kindLabel: label, clients: cs, writer: w, memories: mems,
			events: events, done: sup.Done()},
	}
}

// runCache returns the maker of each run's cache. The cache keeps objects
// without their managedFields: the engine and its handlers do not read
// them, and they are the bulk of a cached object, unstructured ones above
// all (their fieldsV1 become nested maps).
//
// A ring's member caches only the objects it owns, selected by their owner
// label: its memory holds its share, not the kind.
func runCache(mgr manager.Manager, mapper meta.RESTMapper, namespaces []string, sh *shard) func() (cache.Cache, error) {
	return func() (cache.Cache, error) {
		opts := cache.Options{HTTPClient: mgr.GetHTTPClient(), Scheme: mgr.GetScheme(), Mapper: mapper,
			DefaultTransform: cache.TransformStripManagedFields()}
		if sh != nil {
			opts.DefaultLabelSelector = sh.selector()
		}
		if len(namespaces) > 0 {
			opts.DefaultNamespaces = map[string]cache.Config{}
			for _, ns := range namespaces {
				opts.DefaultNamespaces[ns] = cache.Config{}
			}
		}
		return cache.New(mgr.GetConfig(), opts)
	}
}

func controllerName(gvk schema.GroupVersionKind) string {
	name := strings.ToLower(gvk.Kind)
	if gvk.Group != "" {
		name += "." + gvk.Group
	}
	return "kopf-" + name
}

// noticingHandler enqueues objects as controller-runtime's own handler
// does, and first records whether an object was first seen in the initial
// listing: that is what makes resume handlers run once per process.
//
// A sharded member sees every object that enters its cache as found at
// start: it may come from another member, and this member has none of
// that member's memory of it, just as after a restart (docs/sharding.md).
type noticingHandler struct {
	handler.EnqueueRequestForObject
	memories *memories
	shard    *shard
	log      logr.Logger
}

func (h *noticingHandler) Create(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	if e.Object != nil {
		key := types.NamespacedName{Namespace: e.Object.GetNamespace(), Name: e.Object.GetName()}
		h.memories.notice(e.Object.GetUID(), key, e.IsInInitialList || h.shard != nil)
		if h.shard != nil {
			h.shard.taken.Add(1)
			h.log.V(1).Info("Took the object into this replica's shard.", "namespace", key.Namespace, "name", key.Name)
		}
	}
	h.EnqueueRequestForObject.Create(ctx, e, q)
}
