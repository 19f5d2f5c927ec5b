// Package namespaces follows the namespaces that the operator serves when
// its patterns have globs: a watch of the namespaces that updates the
// served set (internal/scopes) the engine and peering follow
// (docs/scopes.md).
package namespaces

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/go-logr/logr"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/kopf-go/kopf/internal/resources"
	"github.com/kopf-go/kopf/internal/scopes"
)

// Watch follows the cluster's namespaces for patterns with globs
// and keeps the served set up to date: namespaces that match are served
// when they appear and dropped when they are gone (a namespace being
// deleted is still served, so that its objects' deletion is handled).
//
// Without the permission to list and watch namespaces it falls back as
// Kopf does: the namespaces named exactly are served, and the patterns
// with globs are refused with an error in the log; if nothing is left,
// the operator fails rather than run serving nothing.
//
// It is a manager Runnable of every replica (NeedLeaderElection false):
// the engine, peering and a ring's assigner all follow the served set.
type Watch struct {
	mgr      manager.Manager
	patterns scopes.Namespaces
	served   *scopes.Served
	log      logr.Logger
}

// Served is the served set of the patterns: the whole cluster,
// fixed names, or (for globs) a set that a Watch fills in, which
// is then returned too.
func Served(mgr manager.Manager, patterns []string) (*scopes.Served, *Watch, error) {
	ns, err := scopes.ParseNamespaces(patterns)
	if err != nil {
		return nil, nil, fmt.Errorf("invalid namespaces: %w", err)
	}
	switch {
	case ns.ClusterWide():
		return scopes.ServeAll(), nil, nil
	case ns.Exact():
		// Kubernetes lets an operator watch a namespace that does not
		// exist yet: its objects are served once it does, and no
		// permission on namespaces is needed.
		return scopes.ServeNames(ns.Names()), nil, nil
	}
	served := scopes.ServeLater()
	return served, &Watch{mgr: mgr, patterns: ns, served: served,
		log: mgr.GetLogger().WithName("namespaces")}, nil
}

func (w *Watch) NeedLeaderElection() bool { return false }

// Start checks the permissions, then follows the namespaces until ctx is
// done.
func (w *Watch) Start(ctx context.Context) error {
	allowed, err := w.mayWatchNamespaces(ctx)
	if err != nil {
		return err
	}
	if !allowed {
		names := w.patterns.Names()
		w.log.Error(errNamespacesForbidden, "Namespace patterns with globs are not served; only the namespaces named exactly are.",
			"refused", w.patterns.Globbed(), "served", names)
		if len(names) == 0 {
			return fmt.Errorf("serve the namespaces %q: %w", w.patterns.Patterns(), errNamespacesForbidden)
		}
		w.served.Set(names)
		<-ctx.Done()
		return nil
	}
	// Namespaces are watched whole, not as metadata: controller-runtime's
	// metadata watches can leave a goroutine behind when they stop, and
	// a namespace is small.
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		return err
	}
	c, err := cache.New(w.mgr.GetConfig(), cache.Options{HTTPClient: w.mgr.GetHTTPClient(), Scheme: scheme,
		Mapper: w.mgr.GetRESTMapper(), DefaultTransform: cache.TransformStripManagedFields()})
	if err != nil {
		return fmt.Errorf("create the cache of namespaces: %w", err)
	}
	informer, err := c.GetInformer(ctx, &corev1.Namespace{})
	if err != nil {
		return fmt.Errorf("watch the namespaces: %w", err)
	}
	// Events of the first listing wait for it to complete: one update
	// then reads them all.
	var synced atomic.Bool
	update := func(any) {
		if synced.Load() {
			w.update(ctx, c)
		}
	}
	registration, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: update, DeleteFunc: update, UpdateFunc: func(_, o any) { update(o) },
	})
	if err != nil {
		return fmt.Errorf("follow the namespaces: %w", err)
	}
	// The first update waits for the first listing.
	return resources.RunListed(ctx, c, registration, func(ctx context.Context) {
		synced.Store(true)
		w.update(ctx, c)
	})
}

// update sets the served set from the namespaces in the cache.
func (w *Watch) update(ctx context.Context, c cache.Cache) {
	var list corev1.NamespaceList
	if err := c.List(ctx, &list); err != nil {
		w.log.Error(err, "Cannot list the namespaces from the cache.")
		return
	}
	existing := make([]string, 0, len(list.Items))
	for _, ns := range list.Items {
		existing = append(existing, ns.Name)
	}
	before, _ := w.served.Now()
	selected := w.patterns.Select(existing)
	if w.served.Set(selected) {
		w.log.Info("Serving the namespaces that match the patterns.", "namespaces", selected,
			"added", missing(selected, before), "removed", missing(before, selected))
	}
}

// missing are the names of a that b lacks.
func missing(a, b []string) []string {
	var out []string
	for _, n := range a {
		if !slices.Contains(b, n) {
			out = append(out, n)
		}
	}
	return out
}

// errNamespacesForbidden is why patterns with globs are refused.
var errNamespacesForbidden = errors.New("no permission to list and watch namespaces, which patterns with globs need")

// mayWatchNamespaces asks the API server whether the operator may list
// and watch namespaces (every user may ask that of itself).
func (w *Watch) mayWatchNamespaces(ctx context.Context) (bool, error) {
	return resources.SelfReview(ctx, w.mgr, []authorizationv1.ResourceAttributes{
		{Verb: "list", Resource: "namespaces"}, {Verb: "watch", Resource: "namespaces"},
	})
}
