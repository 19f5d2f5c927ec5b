package engine

// The engine's scope: which namespaces and kinds a run serves, and what
// the engine does when they change (docs/scopes.md).

import (
	"context"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/kopf-go/kopf/internal/scopes"
)

// watchScope calls rescope when the served namespaces change, or when the
// served resources change in a way that changes the served kinds (a CRD
// of another operator's changes nothing here).
func (e *engine) watchScope(ctx context.Context, nsChanged, resChanged <-chan struct{}, rescope func()) {
	for {
		select {
		case <-nsChanged:
			rescope()
			return
		case <-resChanged:
			var resources []scopes.Resource
			resources, resChanged = e.resources.Now()
			if e.kinds.differs(resources) {
				rescope()
				return
			}
		case <-ctx.Done():
			return
		}
	}
}

// dropUnserved forgets the remembered objects of the namespaces that are
// no longer served, and stops their daemons as for deleted objects: a
// namespace leaves the served set when it is gone, with its objects.
func (e *engine) dropUnserved() {
	if e.served.All() {
		return
	}
	served, _ := e.served.Now()
	for _, r := range e.kinds.all() {
		r.forgetObjects(func(key types.NamespacedName) bool {
			return key.Namespace == "" || slices.Contains(served, key.Namespace)
		})
	}
}

// dropKinds forgets the objects of kinds that are no longer served (their
// CRD is gone, and its objects with it), and stops their daemons as for
// deleted objects.
func (e *engine) dropKinds(dropped []*kindState) {
	for _, r := range dropped {
		e.log.Info("The resource is no longer served; its objects are forgotten.", "kind", r.objects.GVK.String())
		r.forgetObjects(func(types.NamespacedName) bool { return false })
	}
}

// cacheSettle bounds how long a stopping run's cache may go on listing.
const cacheSettle = 5 * time.Second

// runCacheUntil runs the cache until ctx is done and, if its informers
// have not all synced by then, a little longer (cacheSettle) so that they
// can: controller-runtime's informers of several namespaces each leave a
// goroutine behind, waiting for a sync that never comes, if they are
// stopped before it. Only reads run meanwhile; handlers have stopped.
func (e *engine) runCacheUntil(ctx context.Context, c cache.Cache) error {
	cacheCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	settled := make(chan struct{})
	go func() {
		defer close(settled)
		select {
		case <-ctx.Done():
		case <-cacheCtx.Done():
			return
		}
		settle, cancel := context.WithTimeout(cacheCtx, cacheSettle)
		defer cancel()
		c.WaitForCacheSync(settle)
		stop()
	}()
	err := c.Start(cacheCtx)
	stop()
	<-settled
	return err
}
