package engine

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/kopf-go/kopf/internal/daemons"
	"github.com/kopf-go/kopf/internal/freeze"
	"github.com/kopf-go/kopf/internal/ownership"
	"github.com/kopf-go/kopf/internal/registry"
	"github.com/kopf-go/kopf/internal/resources"
	"github.com/kopf-go/kopf/internal/scopes"
	"github.com/kopf-go/kopf/pkg/indexing"
)

// engine runs the kinds' controllers on a cache of their own, and stops
// both whenever the operator freezes: the watch streams close, and when the
// operator runs again, a fresh cache lists every object afresh, so that
// nothing created, changed or deleted meanwhile goes unhandled. (A manager
// cannot stop the controllers it owns; these are the engine's.) It is a
// manager Runnable.
type engine struct {
	mgr manager.Manager
	// httpClient is the manager's, traced if the operator traces.
	httpClient *http.Client
	// mapper is the manager's REST mapper, remembering what it found.
	mapper meta.RESTMapper
	// kinds are the reconcilers of the resources served now, and of all
	// that were served before.
	kinds *kindSet
	// resources follows what the cluster serves.
	resources *resources.Watch
	sup       *daemons.Supervisor
	toggle    *freeze.Toggle
	// cacheOf makes a run's cache of the given namespaces (none: the
	// whole cluster) for the kinds.
	cacheOf func(namespaces []string, kinds []*kindState) (cache.Cache, error)
	// adoptCacheOf makes a run's cache of the objects of a retired ring
	// member (adoption.go).
	adoptCacheOf func(namespaces []string, kinds []*kindState, sel labels.Selector) (cache.Cache, error)
	// served are the namespaces served now.
	served *scopes.Served
	// runCache is the current run's cache; nil between runs.
	runCache atomic.Pointer[cache.Cache]
	wrap     func(client.Client) client.Client
	indices  *indexing.Indices
	reg      *registry.Registry
	// childGVKs are the kinds of the registered children.
	childGVKs map[*registry.ChildKind]schema.GroupVersionKind
	// settings are the engine's settings, with defaults.
	settings Settings
	// own says which objects are this replica's: all of them, or a ring
	// member's share.
	own ownership.Ownership
	// started: the startup handlers have finished.
	started atomic.Bool
	log     logr.Logger
}

// NeedLeaderElection: only the leading replica handles objects (a ring's
// members are added as runnables of every replica: see membership.go).
func (e *engine) NeedLeaderElection() bool { return true }

// Start runs the startup handlers, then the controllers until the
// operator stops (pausing while it is frozen), then the cleanup handlers.
// If the replica loses its objects at once (a ring member's fence), every
// handler's and daemon's context is cancelled then, without the graceful
// stop's backoffs.
func (e *engine) Start(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		select {
		case <-e.own.Lost():
			e.log.Info("This replica lost its objects: every handler and daemon is cancelled now.")
			e.sup.Fence()
			cancel()
			if e.settings.Sharding.Lost != nil {
				close(e.settings.Sharding.Lost)
			}
		case <-ctx.Done():
		}
	}()
	defer func() { <-watched }()
	following := make(chan struct{})
	go func() {
		defer close(following)
		e.resources.Run(ctx)
	}()
	defer func() { <-following }()
	defer cancel()
	if err := e.startup(ctx); err != nil {
		return err
	}
	e.started.Store(true)
	if e.settings.Ready != nil {
		close(e.settings.Ready)
	}
	defer e.cleanup(ctx)
	first := true
	for {
		if frozen, reason := e.toggle.Frozen(); frozen && first {
			e.log.Info("The operator starts frozen, and waits.", "reason", reason)
		}
		first = false
		if err := e.toggle.WaitFor(ctx, false); err != nil {
			return nil
		}
		e.sup.Resume()
		end, err := e.runUntilChanged(ctx)
		if err != nil {
			return err
		}
		switch end {
		case runStopped:
			return nil
		case runRescoped:
			e.dropUnserved()
			continue
		}
		_, reason := e.toggle.Frozen()
		e.log.Info("Pausing the watch-streams.", "blockers", reason)
		e.sup.Pause()
		if err := e.toggle.WaitFor(ctx, false); err != nil {
			return nil
		}
		e.log.Info("Resuming the watch-streams after the pause; listing everything afresh.")
	}
}

// runEnd is why a run of the controllers ended.
type runEnd int32

const (
	// runStopped: the operator stops.
	runStopped runEnd = iota
	// runFrozen: the operator freezes; the next run lists everything
	// afresh once it runs again.
	runFrozen
	// runRescoped: the served namespaces changed; the next run's cache
	// watches the new ones (docs/scopes.md).
	runRescoped
)

// runUntilChanged runs the controllers until the operator stops, freezes
// or serves other namespaces, and returns once all of them have stopped.
func (e *engine) runUntilChanged(ctx context.Context) (runEnd, error) {
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var end atomic.Int32
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if e.toggle.WaitFor(runCtx, true) == nil {
			end.CompareAndSwap(0, int32(runFrozen))
			cancel()
		}
	}()
	err := e.run(runCtx, func() {
		end.CompareAndSwap(0, int32(runRescoped))
		cancel()
	})
	cancel()
	wg.Wait()
	if ctx.Err() != nil {
		return runStopped, err
	}
	return runEnd(end.Load()), err
}

// run builds a fresh cache of the served namespaces and fresh
// controllers of the served resources, runs them until ctx is done, and
// waits for all of them; it calls rescope when the served namespaces or
// resources change. The cache waits for the ownership to be ready (a ring
// member's selects its share by its name in the ring), and for the served
// namespaces and resources to be known.
func (e *engine) run(ctx context.Context, rescope func()) error {
	for _, ready := range []<-chan struct{}{e.own.Ready(), e.served.Ready(), e.resources.Ready()} {
		select {
		case <-ready:
		case <-ctx.Done():
			return nil
		}
	}
	namespaces, nsChanged := e.served.Now()
	resources, resChanged := e.resources.Now()
	e.dropKinds(e.kinds.resolve(resources))
	kinds := e.kinds.current()
	var watching sync.WaitGroup
	defer watching.Wait()
	watching.Add(1)
	go func() {
		defer watching.Done()
		e.watchScope(ctx, nsChanged, resChanged, rescope)
	}()
	switch {
	case !e.served.All() && len(namespaces) == 0:
		e.log.Info("No namespace is served now; waiting for one that matches.", "patterns", e.settings.Namespaces)
		<-ctx.Done()
		return nil
	case len(kinds) == 0:
		e.log.Info("No resource is served now; waiting for one.")
		<-ctx.Done()
		return nil
	}
	if gate := e.settings.WatchGate; gate != nil {
		for _, r := range kinds {
			gate(ctx, r.objects.GVK)
		}
		if ctx.Err() != nil {
			return nil
		}
	}
	c, err := e.cacheOf(namespaces, kinds)
	if err != nil {
		return fmt.Errorf("create the cache: %w", err)
	}
	e.runCache.Store(&c)
	defer e.runCache.Store(nil)
	adopt := &adoption{e: e, namespaces: namespaces, kinds: kinds, caches: map[adoptKey]*adoptCache{}}
	reader, err := e.runReader(c, adopt, kinds)
	if err != nil {
		return err
	}
	byKind, err := e.controllers(reader, c, kinds)
	defer func() {
		for _, r := range kinds {
			r.clients.Set(nil)
		}
	}()
	if err != nil {
		return err
	}
	adopt.ctrls = byKind
	var ctrls []controller.Controller
	for _, r := range kinds {
		if ctrl, ok := byKind[r]; ok {
			ctrls = append(ctrls, ctrl)
		}
	}
	var childCache cache.Cache
	var recalls []func(context.Context)
	if owned := e.ownedChildren(kinds); len(owned) > 0 {
		if childCache, err = e.childrenCache(namespaces, owned); err != nil {
			return fmt.Errorf("create the children's cache: %w", err)
		}
		for _, o := range owned {
			ctrl, recall, err := e.childController(o, c, childCache)
			if err != nil {
				return err
			}
			ctrls = append(ctrls, ctrl)
			recalls = append(recalls, recall)
		}
	}

	var wg sync.WaitGroup
	errs := make(chan error, len(ctrls)+2)
	start := func(f func(context.Context) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(ctx); err != nil && !errors.Is(err, context.Canceled) {
				errs <- err
			}
		}()
	}
	start(func(ctx context.Context) error { return e.runCacheUntil(ctx, c) })
	if childCache != nil {
		start(func(ctx context.Context) error { return e.runCacheUntil(ctx, childCache) })
	}
	// Indices are built afresh from each listing; handlers start only once
	// the listing of every indexed kind is indexed, as Kopf guarantees.
	if err := e.lowLevel(ctx, c, kinds); err != nil {
		errs <- err
	} else {
		for _, ctrl := range ctrls {
			start(ctrl.Start)
		}
		start(func(ctx context.Context) error {
			e.recallGone(ctx, c, kinds)
			return nil
		})
		start(func(ctx context.Context) error {
			adopt.run(ctx)
			return nil
		})
		for _, recall := range recalls {
			start(func(ctx context.Context) error {
				recall(ctx)
				return nil
			})
		}
		start(func(ctx context.Context) error {
			return e.own.Watch(ctx, e.shares, func(stray func(namespace, name string) bool) { e.recheck(ctx, kinds, stray) })
		})
	}
	wg.Wait()
	close(errs)
	return errors.Join(collect(errs)...)
}

// runReader is what the run's clients read the engine's kinds from: the
// run's cache, and for a ring member that adopts, its adoption caches
// and the objects it claimed, between them (runreader.go).
func (e *engine) runReader(c cache.Cache, adopt *adoption, kinds []*kindState) (client.Reader, error) {
	if e.own.ClaimAdopted() == nil {
		return c, nil
	}
	byGVK := map[string]*kindState{}
	for _, r := range kinds {
		byGVK[r.objects.GVK.String()] = r
	}
	return &runReader{main: c, a: adopt, kinds: byGVK, scheme: e.mgr.GetScheme()}, nil
}

// parts are what the ownership gets to know of the engine to make the
// manager's runnables: runnables are the engine's, in order.
func (e *engine) parts(runnables []manager.Runnable) ownership.Engine {
	p := ownership.Engine{Config: e.mgr.GetConfig(), HTTPClient: e.mgr.GetHTTPClient(), Mapper: e.mapper, Toggle: e.toggle,
		Idle: e.sup.Idle, Runnables: runnables, Working: []manager.Runnable{e, e.sup}}
	for _, kind := range e.reg.Kinds {
		if gvk, ok := e.kinds.static[kind]; ok {
			p.Kinds = append(p.Kinds, gvk)
			if works(kind) {
				p.Finalized = append(p.Finalized, gvk)
			}
		} else {
			p.Unknown = append(p.Unknown, kind.Selector.String())
		}
	}
	return p
}

// shares count the objects the engine remembers, by kind (the kinds'
// metrics labels).
func (e *engine) shares() map[string]int {
	out := map[string]int{}
	for _, k := range e.kinds.current() {
		out[k.kindLabel] += k.memories.Size()
	}
	return out
}

// currentCache is the current run's cache, nil between runs.
func (e *engine) currentCache() client.Reader {
	if c := e.runCache.Load(); c != nil {
		return *c
	}
	return nil
}
