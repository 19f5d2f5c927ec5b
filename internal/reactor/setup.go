// Package reactor is the only wiring into controller-runtime: one
// controller per registered kind, whose reconciles it turns into Kopf's
// causes, handler runs and one patch per cycle.
package reactor

import (
	"context"
	"fmt"
	"strings"

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
	disco, err := discovery.NewDiscoveryClientForConfig(mgr.GetConfig())
	if err != nil {
		return nil, fmt.Errorf("create a discovery client: %w", err)
	}
	// Writes go straight to the API server; the manager's own cache is
	// left alone (reading through it would start informers in it).
	mapper := newMemoMapper(mgr.GetRESTMapper())
	writer, err := client.New(mgr.GetConfig(), client.Options{
		HTTPClient: mgr.GetHTTPClient(), Scheme: mgr.GetScheme(), Mapper: mapper,
	})
	if err != nil {
		return nil, fmt.Errorf("create a client: %w", err)
	}
	wrap := s.WrapClient
	if wrap == nil {
		wrap = func(c client.Client) client.Client { return c }
	}
	writer = wrap(writer)
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
	toggle := &freeze.Toggle{}
	eng := &engine{mgr: mgr, mapper: mapper, sup: sup, toggle: toggle, wrap: wrap, indices: s.Indices, reg: reg, settings: s,
		log: mgr.GetLogger().WithName("engine"),
		cacheOf: func() (cache.Cache, error) {
			// The cache keeps objects without their managedFields: the
			// engine and its handlers do not read them, and they are the
			// bulk of a cached object, unstructured ones above all (their
			// fieldsV1 become nested maps).
			opts := cache.Options{HTTPClient: mgr.GetHTTPClient(), Scheme: mgr.GetScheme(), Mapper: mapper,
				DefaultTransform: cache.TransformStripManagedFields()}
			if len(s.Namespaces) > 0 {
				opts.DefaultNamespaces = map[string]cache.Config{}
				for _, ns := range s.Namespaces {
					opts.DefaultNamespaces[ns] = cache.Config{}
				}
			}
			return cache.New(mgr.GetConfig(), opts)
		}}
	for _, kind := range reg.Kinds {
		gvk := kind.GVK
		if gvk.Empty() {
			gvk, err = apiutil.GVKForObject(kind.NewObject(), mgr.GetScheme())
			if err != nil {
				return nil, fmt.Errorf("find the kind of %T: %w", kind.NewObject(), err)
			}
		}
		label := metrics.Kind(gvk)
		retrying, failed := metrics.Objects(label)
		eng.kinds = append(eng.kinds, &reconciler{
			kind:      kind,
			gvk:       gvk,
			kindLabel: label,
			settings:  s,
			writer:    writer,
			memories:  newMemories(s.Memo, retrying, failed),
			sup:       sup,
			events:    make(chan event.GenericEvent, enqueueBuffer),
			daemonLog: mgr.GetLogger().WithValues("controller", controllerName(gvk),
				"controllerGroup", gvk.Group, "controllerKind", gvk.Kind),
			statusSubresource: func(ctx context.Context) (bool, error) {
				return hasStatusSubresource(disco, gvk)
			},
		})
	}
	ps := s.Peering
	ps.Namespaces, ps.Clock, ps.Logger = s.Namespaces, s.Clock, mgr.GetLogger().WithName("peering")
	peers, err := peering.New(mgr.GetConfig(), ps, toggle)
	if err != nil {
		return nil, err
	}
	opMetrics := &operatorMetrics{kinds: eng.kinds, identity: peers.Identity(), toggle: toggle}
	for _, r := range []manager.Runnable{s.Poster, sup, eng, peers, opMetrics} {
		if err := mgr.Add(r); err != nil {
			return nil, fmt.Errorf("add the engine to the manager: %w", err)
		}
	}
	return addHealth(mgr, eng, peers.Identity(), reg, s)
}

func controllerName(gvk schema.GroupVersionKind) string {
	name := strings.ToLower(gvk.Kind)
	if gvk.Group != "" {
		name += "." + gvk.Group
	}
	return "kopf-" + name
}

// hasStatusSubresource asks discovery whether the kind has /status, which
// decides where results go.
func hasStatusSubresource(disco discovery.DiscoveryInterface, gvk schema.GroupVersionKind) (bool, error) {
	list, err := disco.ServerResourcesForGroupVersion(gvk.GroupVersion().String())
	if err != nil {
		return false, fmt.Errorf("discover the resources of %s: %w", gvk.GroupVersion(), err)
	}
	plural := ""
	for _, res := range list.APIResources {
		if res.Kind == gvk.Kind && !strings.Contains(res.Name, "/") {
			plural = res.Name
		}
	}
	if plural == "" {
		return false, fmt.Errorf("discover the resource of kind %s in %s: not served", gvk.Kind, gvk.GroupVersion())
	}
	for _, res := range list.APIResources {
		if res.Name == plural+"/status" {
			return true, nil
		}
	}
	return false, nil
}

// noticingHandler enqueues objects as controller-runtime's own handler
// does, and first records whether an object was first seen in the initial
// listing: that is what makes resume handlers run once per process.
type noticingHandler struct {
	handler.EnqueueRequestForObject
	memories *memories
}

func (h *noticingHandler) Create(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	if e.Object != nil {
		key := types.NamespacedName{Namespace: e.Object.GetNamespace(), Name: e.Object.GetName()}
		h.memories.notice(e.Object.GetUID(), key, e.IsInInitialList)
	}
	h.EnqueueRequestForObject.Create(ctx, e, q)
}
