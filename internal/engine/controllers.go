package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/kopf-go/kopf/internal/jitter"
	"github.com/kopf-go/kopf/internal/lazylog"
	"github.com/kopf-go/kopf/internal/lowlevel"
)

// The controllers of one run of the engine: made on the run's cache, with
// the low-level handlers on its informers, and the objects the cache no
// longer has recalled.

// controllers points the kinds at a client on the run's reader, and makes
// the controllers of those that reconcile, on the run's cache.
func (e *engine) controllers(reader client.Reader, c cache.Cache, kinds []*kindState) (map[*kindState]controller.Controller, error) {
	// Reads come from the run's cache for every kind, unstructured ones
	// included: controller-runtime sends unstructured reads to the API
	// server unless told otherwise, which would cost one GET per reconcile
	// of every kind registered with ForKind.
	runClient, err := client.New(e.mgr.GetConfig(), client.Options{
		HTTPClient: e.httpClient, Scheme: e.mgr.GetScheme(), Mapper: e.mapper,
		Cache: &client.CacheOptions{Reader: reader, Unstructured: true},
	})
	if err != nil {
		return nil, fmt.Errorf("create a client on the cache: %w", err)
	}
	runClient = e.wrap(runClient)
	ctrls := map[*kindState]controller.Controller{}
	for _, r := range kinds {
		r.clients.Set(runClient)
		if !r.reconciles() {
			continue // only low-level handlers: nothing to reconcile
		}
		ctrl, err := e.controller(r, c)
		if err != nil {
			return nil, err
		}
		ctrls[r] = ctrl
	}
	return ctrls, nil
}

// lowLevel registers the indexing and on-event handlers of the kinds that
// have them on the run's informers, and waits until the first listing of
// every indexed kind has been indexed.
func (e *engine) lowLevel(ctx context.Context, c cache.Cache, kinds []*kindState) error {
	_, err := e.lowLevelOn(ctx, c, kinds, nil)
	return err
}

// lowLevelOn registers the low-level handlers on the informers of a cache
// of the run: the run's own (accept nil: the indices start empty), or one
// of its adoption caches (adoption.go), whose objects that accept names
// (those this replica adopts) are added to the indices. It returns the
// handlers by kind, so that an adoption cache can offer them the objects
// that an epoch's change, not an event, made adopted.
func (e *engine) lowLevelOn(ctx context.Context, c cache.Cache, kinds []*kindState, accept func(client.Object) bool) (map[*kindState]*lowlevel.Handler, error) {
	fresh := accept == nil
	var indexed []toolscache.InformerSynced
	for _, r := range kinds {
		for _, h := range r.objects.Registered.Indexing {
			if fresh {
				e.indices.Ensure(h.ID).Clear()
			}
		}
	}
	handlers := map[*kindState]*lowlevel.Handler{}
	for _, r := range kinds {
		if len(r.objects.Registered.Indexing) == 0 && len(r.objects.Registered.Watching) == 0 {
			continue
		}
		informer, err := c.GetInformer(ctx, r.objects.New())
		if err != nil {
			if ctx.Err() != nil {
				return handlers, nil
			}
			return handlers, fmt.Errorf("watch %s: %w", r.objects.GVK.Kind, err)
		}
		handler := lowlevel.New(ctx, lowlevel.Kind{Registered: r.objects.Registered, Objects: r.objects, Label: r.kindLabel, Memories: r.memories,
			Own: r.own, Indices: r.settings.Indices, Clock: r.settings.Clock, Backoff: r.settings.Daemons.DefaultBackoff,
			HandedOver: r.leftCache, Accept: accept, Reconciles: r.reconciles(), Context: r.handlerContext, Apply: r.host.Apply},
			e.mgr.GetLogger().WithValues("controller", controllerName(r.objects.GVK)))
		registration, err := informer.AddEventHandler(toolscache.ResourceEventHandlerDetailedFuncs{
			AddFunc: handler.OnAdd, UpdateFunc: handler.OnUpdate, DeleteFunc: handler.OnDelete,
		})
		if err != nil {
			return handlers, fmt.Errorf("handle the events of %s: %w", r.objects.GVK.Kind, err)
		}
		handlers[r] = handler
		if len(r.objects.Registered.Indexing) > 0 {
			indexed = append(indexed, registration.HasSynced)
		}
	}
	if len(indexed) > 0 && !toolscache.WaitForCacheSync(ctx.Done(), indexed...) && ctx.Err() == nil {
		return handlers, errors.New("the first listing of the indexed kinds did not complete")
	}
	return handlers, nil
}

// controller makes a kind's controller for one run: its objects come from
// the run's cache, and its daemons' requests from the kind's channel.
func (e *engine) controller(r *kindState, c cache.Cache) (controller.Controller, error) {
	ctrl, err := controller.NewUnmanaged(controllerName(r.objects.GVK), e.controllerOptions(controllerName(r.objects.GVK), r.cycles, r.settings.MaxConcurrentReconciles))
	if err != nil {
		return nil, fmt.Errorf("create the controller for %s: %w", r.objects.GVK.Kind, err)
	}
	if err := ctrl.Watch(source.Kind[client.Object](c, r.objects.New(), &noticingHandler{memories: r.memories, own: e.own})); err != nil {
		return nil, fmt.Errorf("watch %s: %w", r.objects.GVK.Kind, err)
	}
	// Daemons ask for reconciles (to release a finalizer, or to spawn
	// again) through this channel.
	if err := ctrl.Watch(source.Channel(r.events, &handler.EnqueueRequestForObject{})); err != nil {
		return nil, fmt.Errorf("watch the requests of %s daemons: %w", r.objects.GVK.Kind, err)
	}
	return ctrl, nil
}

// controllerOptions are the options of a run's controller: the embedding
// manager's defaults, with the engine's rate limiter and reconcile
// loggers.
func (e *engine) controllerOptions(name string, r reconcile.Reconciler, workers int) controller.Options {
	opts := controller.Options{Reconciler: r, MaxConcurrentReconciles: workers, Logger: e.mgr.GetLogger(),
		LogConstructor: reconcileLogger(e.mgr.GetLogger(), name)}
	opts.DefaultFromConfig(e.mgr.GetControllerOptions())
	opts.RateLimiter = jitteredRateLimiter(ptr.Deref(opts.UsePriorityQueue, true))
	// Each run makes the controllers again, under the same names.
	opts.SkipNameValidation = ptr.To(true)
	// A panic that the engine's own containment misses ends that
	// reconcile, not the process, whatever the embedding manager's
	// setting (controller-runtime's default is the same).
	opts.RecoverPanic = ptr.To(true)
	return opts
}

// jitteredRateLimiter is controller-runtime's default rate limiter of a
// controller's queue (with its priority queue, the per-item backoff of
// 5 ms doubling up to 1000 s; without it, that and an overall bucket of
// 10 a second), with jitter: the objects whose reconciles one outage of
// the API server failed together are not all retried at 5 ms, 10 ms, 20 ms
// ... after it. (Errors reach it when the throttling of unexpected errors
// is off, or when an object cannot even be read.)
func jitteredRateLimiter(priorityQueue bool) workqueue.TypedRateLimiter[reconcile.Request] {
	base := workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]()
	if priorityQueue {
		base = workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](5*time.Millisecond, 1000*time.Second)
	}
	return jitter.Limiter(base, jitter.Default())
}

// recallGone asks for a reconcile of every remembered object that the
// run's fresh cache does not have. Objects deleted while the operator was
// frozen bring no event of their own; their reconcile (not found) forgets
// them, their daemons, and their place in the metrics.
func (e *engine) recallGone(ctx context.Context, c cache.Cache, kinds []*kindState) {
	if !c.WaitForCacheSync(ctx) {
		return
	}
	for _, r := range kinds {
		for _, key := range r.memories.Keys() {
			obj := r.objects.New()
			if err := c.Get(ctx, key, obj); !apierrors.IsNotFound(err) {
				continue
			}
			if !r.reconciles() {
				r.memories.Forget(key) // no controller, no daemons: nothing else to end
				continue
			}
			if !r.request(ctx, key) {
				return
			}
		}
	}
}

// recheck asks for a reconcile of every remembered object that stray
// tells: a ring's members changed, and those objects may have to be
// handed over (docs/sharding.md, "The ring's epoch"). The objects are
// the member's share, in memory; nothing is read from the API server.
func (e *engine) recheck(ctx context.Context, kinds []*kindState, stray func(namespace, name string) bool) {
	for _, r := range kinds {
		if !r.reconciles() {
			continue
		}
		for _, key := range r.memories.Keys() {
			if stray(key.Namespace, key.Name) && !r.request(ctx, key) {
				return
			}
		}
	}
}

// request asks the kind's controller for a reconcile of the object under
// key; false if ctx ended first.
func (r *kindState) request(ctx context.Context, key types.NamespacedName) bool {
	select {
	case r.events <- requestFor(key):
		return true
	case <-ctx.Done():
		return false
	}
}

// requestFor is the event that asks the kind's controller for a reconcile
// of the object under key: its handler reads the key alone, so the event
// carries no object of the kind (an unstructured one is four maps), only
// its name. A takeover asks for tens of thousands at once.
func requestFor(key types.NamespacedName) event.GenericEvent {
	return event.GenericEvent{Object: &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}}
}

func collect(errs <-chan error) []error {
	var out []error
	for err := range errs {
		out = append(out, err)
	}
	return out
}

// reconcileLogger makes the logger of each reconcile as controller-
// runtime's default does (the controller's name; the object, its
// namespace and its name), with the object's values bound only when the
// reconcile writes a line (lazylog.ForCall). A structured logger such as
// zap encodes values at every WithValues: three times a reconcile with
// the default (the object, controller-runtime's reconcileID, and the
// posting of the object's lines), whether or not the cycle writes
// anything, and most cycles write nothing (a takeover's tens of
// thousands of first cycles among them).
func reconcileLogger(base logr.Logger, name string) func(*reconcile.Request) logr.Logger {
	controllerLog := base.WithValues("controller", name)
	return func(req *reconcile.Request) logr.Logger {
		if req == nil {
			return controllerLog
		}
		return lazylog.ForCall(controllerLog, "object", klog.KRef(req.Namespace, req.Name), "namespace", req.Namespace, "name", req.Name)
	}
}
