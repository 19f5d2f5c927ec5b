// Package engine is the only wiring into controller-runtime: the engine
// Runnable, its own cache and one controller per kind, stopped by freezes,
// whose reconciles are one object's cycle each (internal/cycle).
package engine

import (
	"context"
	"fmt"
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
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

	"github.com/kopf-go/kopf/internal/activities"
	"github.com/kopf-go/kopf/internal/clients"
	"github.com/kopf-go/kopf/internal/daemons"
	"github.com/kopf-go/kopf/internal/freeze"
	"github.com/kopf-go/kopf/internal/memory"
	"github.com/kopf-go/kopf/internal/metrics"
	"github.com/kopf-go/kopf/internal/namespaces"
	"github.com/kopf-go/kopf/internal/objects"
	"github.com/kopf-go/kopf/internal/ownership"
	"github.com/kopf-go/kopf/internal/peering"
	"github.com/kopf-go/kopf/internal/posting"
	"github.com/kopf-go/kopf/internal/registry"
	"github.com/kopf-go/kopf/internal/resources"
	"github.com/kopf-go/kopf/internal/ring"
	"github.com/kopf-go/kopf/internal/ring/share"
	"github.com/kopf-go/kopf/internal/scopes"
	"github.com/kopf-go/kopf/internal/tracing"
	"github.com/kopf-go/kopf/internal/write"
)

// Installed is what Setup gives back: the prober of the probe handlers
// (the one behind the liveness check), so that another endpoint can serve
// the same probes, with the same memo and indices; and Lost, closed if the
// replica loses its objects at once (a ring member's fence; nil if it is
// not sharded), so that a program can exit without a graceful stop.
type Installed struct {
	Prober *activities.Prober
	Lost   <-chan struct{}
}

// Setup adds the engine to the manager: the kinds' controllers (run by
// the engine itself, so that a freeze can stop their watches), the daemon
// supervisor, peering, a readiness check, and the metrics of handlers,
// daemons, objects and the frozen state (on controller-runtime's registry).
// Problems of the registration are reported here, all at once.
func Setup(mgr manager.Manager, reg *registry.Registry, s Settings) (*Installed, error) {
	if !s.resolved {
		return nil, errUnresolved
	}
	if err := reg.Validate(); err != nil {
		return nil, fmt.Errorf("invalid handler registration: %w", err)
	}
	if err := metrics.Register(); err != nil {
		return nil, fmt.Errorf("register the metrics: %w", err)
	}
	if s.Poster == nil {
		s.Poster = &posting.Poster{Client: mgr.GetClient(), Scheme: mgr.GetScheme(), Now: s.Clock.Now,
			Settings: s.Posting, Log: mgr.GetLogger().WithName("posting")}
	}
	served, watch, err := namespaces.Served(mgr, s.Namespaces)
	if err != nil {
		return nil, err
	}
	names, _ := served.Now()
	// Handlers read through the manager's cache, unless the served
	// namespaces follow patterns, which it cannot follow.
	var following *clients.Served
	if s.Client == nil {
		if s.Client, err = handlersClient(mgr, s.Tracer); err != nil {
			return nil, err
		}
		if watch != nil {
			following = &clients.Served{Client: s.Client}
			s.Client = following
		}
	}
	if s.Reader == nil {
		s.Reader = mgr.GetAPIReader()
	}
	if s.Sharding.Ring != "" {
		if s.Sharding.Namespace == "" {
			s.Sharding.Namespace = leaseNamespace(names)
		}
		// Peers tell rings apart by namespace and name, as the ring's
		// keys do.
		s.Peering.Ring = ring.ID(s.Sharding.Namespace, s.Sharding.Ring)
	}
	eng, err := newEngine(mgr, reg, s, served, watch != nil)
	if err != nil {
		return nil, err
	}
	if following != nil {
		following.Cache, following.Mapper = eng.currentCache, eng.mapper
	}
	ps := s.Peering
	ps.Namespaces, ps.Clock, ps.Logger = names, s.Clock, mgr.GetLogger().WithName("peering")
	if watch != nil {
		ps.Served = served
	}
	peers, err := peering.New(mgr.GetConfig(), ps, eng.toggle)
	if err != nil {
		return nil, err
	}
	opMetrics := &operatorMetrics{kinds: eng.kinds.all, identity: peers.Identity(), toggle: eng.toggle, ring: s.Sharding.Ring}
	base := []manager.Runnable{s.Poster, eng.sup, eng, peers, opMetrics}
	if watch != nil {
		base = append(base, watch)
	}
	runnables, err := eng.own.Runnables(eng.parts(base))
	if err != nil {
		return nil, err
	}
	for _, r := range runnables {
		if err := mgr.Add(r); err != nil {
			return nil, fmt.Errorf("add the engine to the manager: %w", err)
		}
	}
	prober, err := addHealth(mgr, eng, reg, s)
	if err != nil {
		return nil, err
	}
	return &Installed{Prober: prober, Lost: eng.own.Lost()}, nil
}

// newEngine makes the engine, its supervisor and its kinds' reconcilers.
// Following tells that the served namespaces follow patterns with globs.
func newEngine(mgr manager.Manager, reg *registry.Registry, s Settings, served *scopes.Served, following bool) (*engine, error) {
	disco, err := discovery.NewDiscoveryClientForConfig(mgr.GetConfig())
	if err != nil {
		return nil, fmt.Errorf("create a discovery client: %w", err)
	}
	// Writes go straight to the API server; the manager's own cache is
	// left alone (reading through it would start informers in it).
	mapper := resources.NewMemoMapper(mgr.GetRESTMapper())
	httpClient := s.Tracer.HTTPClient(mgr.GetHTTPClient())
	direct, err := client.New(mgr.GetConfig(), client.Options{
		HTTPClient: httpClient, Scheme: mgr.GetScheme(), Mapper: mapper,
	})
	if err != nil {
		return nil, fmt.Errorf("create a client: %w", err)
	}
	wrap := func(c client.Client) client.Client { return c }
	if s.WrapClient != nil {
		// The operator's wrapper is its code: its panics are contained.
		clientLog := mgr.GetLogger().WithName("client")
		wrap = func(c client.Client) client.Client { return clients.Contain(s.WrapClient, c, clientLog) }
	}
	var own ownership.Ownership = ownership.Unshared{}
	if s.Sharding.Ring != "" {
		// The member's Lease is written without the bound of its writes
		// to objects: it is what extends them.
		s.Sharding.Finalizer = s.Finalizer
		if own, err = share.New(direct, s.Sharding, s.Peering.Identity, s.Clock, mgr.GetLogger(), served, following); err != nil {
			return nil, err
		}
	}
	userWrap := wrap
	wrap = func(c client.Client) client.Client { return own.Bound(userWrap(c)) }
	direct = wrap(direct)
	ds := s.Daemons
	ds.Logger, ds.Local, ds.Observer = mgr.GetLogger().WithName("daemons"), posting.Local, daemonMetrics{}
	ds.BaseContext = tracing.WithTracer(clients.ForHandlers(posting.NewContext(context.Background(), s.Poster), s.Client, s.Reader), s.Tracer)
	sup := daemons.New(ds)
	eng := &engine{mgr: mgr, httpClient: httpClient, mapper: mapper, sup: sup, toggle: &freeze.Toggle{}, wrap: wrap, indices: s.Indices, reg: reg,
		settings: s, log: mgr.GetLogger().WithName("engine"), cacheOf: runCache(mgr, mapper, own.CacheSelector), adoptCacheOf: adoptionCache(mgr, mapper), own: own, served: served}
	static := map[*registry.Kind]schema.GroupVersionKind{}
	for _, kind := range reg.Kinds {
		if kind.Selector != nil {
			continue // resolved while running
		}
		gvk, err := registeredGVK(kind.GVK, kind.NewObject(), mgr.GetScheme())
		if err != nil {
			return nil, fmt.Errorf("find the kind of %T: %w", kind.NewObject(), err)
		}
		static[kind] = gvk
	}
	if eng.childGVKs, err = childGVKs(reg, mgr.GetScheme()); err != nil {
		return nil, err
	}
	eng.resources = resources.NewWatch(mgr, disco, s.Clock)
	eng.kinds = &kindSet{reg: reg, static: static, made: map[string]*kindState{}, log: eng.log,
		make: func(kind *registry.Kind, gvk schema.GroupVersionKind, mems *memory.Store) *kindState {
			r := newKindState(objects.Kind{Registered: kind, GVK: gvk}, s, clients.NewCurrent(direct), write.DiscoveryProbe(disco, gvk), sup, own, mems)
			r.daemonLog = mgr.GetLogger().WithValues("controller", controllerName(gvk),
				"controllerGroup", gvk.Group, "controllerKind", gvk.Kind)
			return r
		}}
	return eng, nil
}

// stripManagedFields is cache.TransformStripManagedFields, without reading
// an unstructured object's managedFields first: that converts each entry
// by reflection, a tenth of a fresh process's CPU over handled objects.
func stripManagedFields(in any) (any, error) {
	if u, ok := in.(*unstructured.Unstructured); ok {
		unstructured.RemoveNestedField(u.Object, "metadata", "managedFields")
		return u, nil
	}
	return cache.TransformStripManagedFields()(in)
}

// runCache returns the maker of each run's cache. The cache keeps objects
// without their managedFields: the engine and its handlers do not read
// them, and they are the bulk of a cached object, unstructured ones above
// all (their fieldsV1 become nested maps).
//
// A ring's member caches only the objects it owns, selected by their owner
// label: its memory holds its share, not the kind.
//
// The selector applies to the engine's kinds only: other kinds that
// handlers read through the cache (servedclient.go) are not the ring's.
//
// The selector is asked for at each run: a member knows its name only
// once it has joined.
func runCache(mgr manager.Manager, mapper meta.RESTMapper, selector func() labels.Selector) func(namespaces []string, kinds []*kindState) (cache.Cache, error) {
	return func(namespaces []string, kinds []*kindState) (cache.Cache, error) {
		return cache.New(mgr.GetConfig(), cacheOptions(mgr, mapper, namespaces, kinds, selector()))
	}
}

// cacheOptions are the options of a run's cache of the namespaces: the
// kinds' objects that sel selects (nil: all of them), without their
// managedFields.
func cacheOptions(mgr manager.Manager, mapper meta.RESTMapper, namespaces []string, kinds []*kindState, sel labels.Selector) cache.Options {
	opts := cache.Options{HTTPClient: mgr.GetHTTPClient(), Scheme: mgr.GetScheme(), Mapper: mapper,
		DefaultTransform: stripManagedFields, DefaultNamespaces: namespaceConfigs(namespaces)}
	if sel != nil {
		opts.ByObject = map[client.Object]cache.ByObject{}
		for _, r := range kinds {
			opts.ByObject[r.objects.New()] = cache.ByObject{Label: sel}
		}
	}
	return opts
}

// adoptionCache returns the maker of a run's cache of the objects of one
// retired ring member (adoption.go): the kinds' objects that sel selects,
// and nothing else, so that a read of another kind through it fails
// instead of starting an informer.
func adoptionCache(mgr manager.Manager, mapper meta.RESTMapper) func(namespaces []string, kinds []*kindState, sel labels.Selector) (cache.Cache, error) {
	return func(namespaces []string, kinds []*kindState, sel labels.Selector) (cache.Cache, error) {
		opts := cacheOptions(mgr, mapper, namespaces, kinds, sel)
		opts.ReaderFailOnMissingInformer = true
		return cache.New(mgr.GetConfig(), opts)
	}
}

// registeredGVK is a registration's GVK: the one given, or that of its Go type
// in the scheme (typed kinds).
func registeredGVK(gvk schema.GroupVersionKind, obj runtime.Object, scheme *runtime.Scheme) (schema.GroupVersionKind, error) {
	if !gvk.Empty() {
		return gvk, nil
	}
	return apiutil.GVKForObject(obj, scheme)
}

// namespaceConfigs are a cache's namespaces; nil (the whole cluster) for
// none.
func namespaceConfigs(namespaces []string) map[string]cache.Config {
	if len(namespaces) == 0 {
		return nil
	}
	out := make(map[string]cache.Config, len(namespaces))
	for _, ns := range namespaces {
		out[ns] = cache.Config{}
	}
	return out
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
	memories *memory.Store
	own      ownership.Ownership
}

func (h *noticingHandler) Create(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	if e.Object != nil {
		key := types.NamespacedName{Namespace: e.Object.GetNamespace(), Name: e.Object.GetName()}
		h.memories.Notice(e.Object.GetUID(), key, h.own.FoundAtStart(e.IsInInitialList))
		h.own.Entered(e.Object)
	}
	h.EnqueueRequestForObject.Create(ctx, e, q)
}

// serviceAccountNamespace is where a pod finds the namespace it runs in.
const serviceAccountNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// PodNamespace is the namespace the replica runs in: $POD_NAMESPACE, else
// its service account's; "" outside a cluster.
func PodNamespace() string {
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	if data, err := os.ReadFile(serviceAccountNamespace); err == nil {
		return strings.TrimSpace(string(data))
	}
	return ""
}

// leaseNamespace is where the ring's Leases live when the settings do not
// say: the namespace the replica runs in (PodNamespace), else the one
// namespace it serves, else "default".
func leaseNamespace(namespaces []string) string {
	if ns := PodNamespace(); ns != "" {
		return ns
	}
	if len(namespaces) == 1 {
		return namespaces[0]
	}
	return "default"
}
