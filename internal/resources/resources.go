// Package resources follows what the cluster serves: discovery asked at
// the start and after CRD changes (or polled), a group that fails keeping
// its last known resources (docs/ARCHITECTURE.md, "The engine"); and the
// REST mapper that remembers what it found.
package resources

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	authorizationv1 "k8s.io/api/authorization/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/kopf-go/kopf/internal/jitter"
	"github.com/kopf-go/kopf/internal/scopes"
)

// Intervals of following the served resources.
const (
	// resourcePollInterval is how often discovery is asked again when
	// CRDs may not be watched, or while a group's discovery fails (plus
	// its jitter).
	resourcePollInterval = 30 * time.Second
	// discoveryRetry is the pause after a failed discovery (plus its
	// jitter), until it first answers.
	discoveryRetry = 5 * time.Second
)

// afterCRDChange are the pauses, one after the other, before each of the
// askings of discovery that follow a change of a CRD (so 0, 1 s and 4 s
// after it): discovery serves a new resource only once its CRD is
// established, and stops serving a deleted one a moment after it is gone.
var afterCRDChange = []time.Duration{0, time.Second, 3 * time.Second}

// Watch follows what the cluster serves: it asks discovery at the
// start, and again whenever a CRD changes (or, without the permission to
// watch CRDs, now and then), and publishes the served resources when they
// change.
type Watch struct {
	mgr   manager.Manager
	disco discovery.DiscoveryInterface
	clock clock.WithTicker
	log   logr.Logger

	jitter jitter.Jitter

	// refreshing serializes the refreshes (the poll's and the run's);
	// failed are the group versions failing now, since when.
	refreshing sync.Mutex
	failed     map[schema.GroupVersion]time.Time

	mu        sync.Mutex
	resources []scopes.Resource
	keys      []string
	known     chan struct{}
	changed   chan struct{}
	// failing: some group versions failed at the last refresh.
	failing bool
}

func NewWatch(mgr manager.Manager, disco discovery.DiscoveryInterface, clk clock.WithTicker) *Watch {
	return &Watch{mgr: mgr, disco: disco, clock: clk, log: mgr.GetLogger().WithName("resources"), jitter: jitter.Default(),
		failed: map[schema.GroupVersion]time.Time{}, known: make(chan struct{}), changed: make(chan struct{})}
}

// failingNow tells whether some group versions failed at the last refresh.
func (w *Watch) failingNow() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.failing
}

// Now are the served resources, and a channel closed at their next
// change.
func (w *Watch) Now() ([]scopes.Resource, <-chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.resources, w.changed
}

// Ready is closed once discovery has answered once.
func (w *Watch) Ready() <-chan struct{} { return w.known }

// Run follows the resources until ctx is done. With the permission to
// watch CRDs, it lists them first and asks discovery after: a CRD that is
// established after that listing changes, and asks again; one that was
// before is in discovery's first answer.
func (w *Watch) Run(ctx context.Context) {
	kicks := make(chan struct{}, 1)
	kick := func() {
		select {
		case kicks <- struct{}{}:
		default:
		}
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	// polling: discovery is asked every resourcePollInterval anyway, so a
	// failing group needs no retries of its own.
	var polling atomic.Bool
	if w.mayWatchCRDs(ctx) {
		listed, failed := make(chan struct{}), make(chan struct{})
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := w.watchCRDs(ctx, kick, listed); err != nil && ctx.Err() == nil {
				polling.Store(true)
				close(failed)
				w.log.Error(err, "Cannot watch the CRDs; asking discovery now and then instead.")
				w.poll(ctx)
			}
		}()
		select {
		case <-listed:
		case <-failed:
		case <-ctx.Done():
			return
		}
	} else {
		w.log.Info("CRDs may not be watched; asking discovery now and then for resources that appear or go.", "interval", resourcePollInterval)
		polling.Store(true)
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.poll(ctx)
		}()
	}
	for !w.refresh(ctx) {
		if !w.wait(ctx, w.jitter.Apply(discoveryRetry)) {
			return
		}
	}
	for {
		kicked, ok := w.await(ctx, kicks, polling.Load())
		switch {
		case !ok:
			return
		case !kicked:
			w.refresh(ctx)
			continue
		}
		for _, d := range afterCRDChange {
			if !w.wait(ctx, d) {
				return
			}
			w.refresh(ctx)
		}
	}
}

// await waits for a change of a CRD (kicked), or, while some group's
// discovery fails, for the time to ask it again (unless the poll asks
// anyway); ok is false once ctx ends.
func (w *Watch) await(ctx context.Context, kicks <-chan struct{}, polling bool) (kicked, ok bool) {
	var retry <-chan time.Time
	if !polling && w.failingNow() {
		t := w.clock.NewTimer(w.jitter.Apply(resourcePollInterval))
		defer t.Stop()
		retry = t.C()
	}
	select {
	case <-ctx.Done():
		return false, false
	case <-retry:
		return false, true
	case <-kicks:
		return true, true
	}
}

// poll asks discovery again every resourcePollInterval.
func (w *Watch) poll(ctx context.Context) {
	for w.wait(ctx, resourcePollInterval) {
		w.refresh(ctx)
	}
}

// refresh asks discovery and publishes the resources if they changed; it
// tells whether discovery answered. The group versions that fail keep
// their last known resources (keepLastKnown), and say so when they begin
// to fail and when they answer again.
func (w *Watch) refresh(ctx context.Context) bool {
	w.refreshing.Lock()
	defer w.refreshing.Unlock()
	d, err := discoverResources(w.disco)
	if err != nil {
		if ctx.Err() == nil {
			w.log.Error(err, "Cannot discover the resources the cluster serves.")
		}
		return false
	}
	w.mu.Lock()
	last := w.resources
	w.mu.Unlock()
	decided := keepLastKnown(last, d)
	w.sayFailures(decided)
	resources := decided.resources
	keys := make([]string, len(resources))
	for i, r := range resources {
		keys[i] = fmt.Sprintf("%s %v %v", r, r.Preferred, r.Verbs)
	}
	slices.Sort(keys)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.failing = len(decided.kept)+len(decided.unknown) > 0
	select {
	case <-w.known:
		if slices.Equal(keys, w.keys) {
			return true
		}
		close(w.changed)
		w.changed = make(chan struct{})
	default:
		close(w.known)
	}
	w.resources, w.keys = resources, keys
	return true
}

// mayWatchCRDs asks the API server whether CRDs may be listed and watched.
func (w *Watch) mayWatchCRDs(ctx context.Context) bool {
	allowed, err := SelfReview(ctx, w.mgr, []authorizationv1.ResourceAttributes{
		{Verb: "list", Group: apiextensionsv1.GroupName, Resource: "customresourcedefinitions"},
		{Verb: "watch", Group: apiextensionsv1.GroupName, Resource: "customresourcedefinitions"},
	})
	if err != nil {
		w.log.Error(err, "Cannot tell whether CRDs may be watched.")
		return false
	}
	return allowed
}

// watchCRDs closes listed once the CRDs are listed, and calls kick at
// every change of a CRD after that, until ctx is done. The CRDs are kept
// without their schemas, which are most of their size.
func (w *Watch) watchCRDs(ctx context.Context, kick func(), listed chan<- struct{}) error {
	scheme := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		return err
	}
	c, err := cache.New(w.mgr.GetConfig(), cache.Options{HTTPClient: w.mgr.GetHTTPClient(), Scheme: scheme,
		Mapper: w.mgr.GetRESTMapper(), DefaultTransform: stripCRD})
	if err != nil {
		return fmt.Errorf("create the cache of CRDs: %w", err)
	}
	informer, err := c.GetInformer(ctx, &apiextensionsv1.CustomResourceDefinition{})
	if err != nil {
		return fmt.Errorf("watch the CRDs: %w", err)
	}
	// The first listing is what discovery has just told; only changes
	// after it ask discovery again.
	registration, err := informer.AddEventHandler(toolscache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(_ any, initial bool) {
			if !initial {
				kick()
			}
		},
		UpdateFunc: func(_, _ any) { kick() },
		DeleteFunc: func(any) { kick() },
	})
	if err != nil {
		return fmt.Errorf("follow the CRDs: %w", err)
	}
	return RunListed(ctx, c, registration, func(context.Context) { close(listed) })
}

// RunListed runs the cache until ctx is done, and calls onListed once the
// handler of the registration has seen the first listing (at once: not
// at the next 100 ms poll, which the engine's start would wait for). The
// goroutine that waits for it ends before RunListed returns: a watch
// stopped early leaves nothing behind.
func RunListed(ctx context.Context, c cache.Cache, registration toolscache.ResourceEventHandlerRegistration, onListed func(ctx context.Context)) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	running, stop := context.WithCancel(ctx)
	defer stop()
	wg.Go(func() {
		if toolscache.WaitFor(running, "", registration.HasSyncedChecker()) {
			onListed(running)
		}
	})
	return c.Start(running)
}

// stripCRD drops what the watch of CRDs does not need.
func stripCRD(o any) (any, error) {
	crd, ok := o.(*apiextensionsv1.CustomResourceDefinition)
	if !ok {
		return o, nil
	}
	crd.ManagedFields = nil
	for i := range crd.Spec.Versions {
		crd.Spec.Versions[i].Schema = nil
	}
	return crd, nil
}

// SelfReview asks whether this operator may do all of the things.
func SelfReview(ctx context.Context, mgr manager.Manager, attrs []authorizationv1.ResourceAttributes) (bool, error) {
	scheme := runtime.NewScheme()
	if err := authorizationv1.AddToScheme(scheme); err != nil {
		return false, err
	}
	c, err := client.New(mgr.GetConfig(), client.Options{HTTPClient: mgr.GetHTTPClient(), Scheme: scheme})
	if err != nil {
		return false, fmt.Errorf("create a client for access reviews: %w", err)
	}
	for _, a := range attrs {
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &a}}
		if err := c.Create(ctx, review); err != nil {
			return false, fmt.Errorf("ask whether %s %s.%s is allowed: %w", a.Verb, a.Resource, a.Group, err)
		}
		if !review.Status.Allowed {
			return false, nil
		}
	}
	return true, nil
}

// wait waits d, or less if ctx ends first; it tells whether ctx goes on.
func (w *Watch) wait(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := w.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C():
		return true
	}
}
