package managed

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// Durations of the writer's Lease: leader election's defaults.
const (
	WriterLeaseDuration = 15 * time.Second
	WriterRenewDeadline = 10 * time.Second
	WriterRetryPeriod   = 2 * time.Second
)

// elect campaigns for the writer's Lease until ctx ends, writing while it
// leads. A replica that stops releases the Lease, and another takes the
// writing over; nobody cleans up, so a rolling update never leaves the
// CRD without its conversion, whichever replica stops first.
func (c *Conversions) elect(ctx context.Context) error {
	for ctx.Err() == nil {
		if err := c.campaign(ctx); err != nil {
			return err
		}
	}
	return nil
}

// campaign runs one election until this replica has led and lost, or ctx
// ends; while it leads, it writes. The elector's goroutine is waited for
// before campaign returns.
func (c *Conversions) campaign(ctx context.Context) error {
	electing, stop := context.WithCancel(logr.NewContext(ctx, c.Logger.WithName("election")))
	defer stop()
	// won is buffered: the elector's goroutine that reports the win never
	// waits for this one.
	won := make(chan context.Context, 1)
	el, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: c.Namespace, Name: Lease(c.Name)},
			Client:     c.Clientset.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: c.Identity},
		},
		LeaseDuration:   WriterLeaseDuration,
		RenewDeadline:   WriterRenewDeadline,
		RetryPeriod:     WriterRetryPeriod,
		ReleaseOnCancel: true,
		Name:            Lease(c.Name),
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(leading context.Context) { won <- leading },
			OnStoppedLeading: func() {},
		},
	})
	if err != nil {
		return fmt.Errorf("elect the writer of the CRDs' conversion: %w", err)
	}
	ran := make(chan struct{})
	go func() {
		defer close(ran)
		el.Run(electing)
	}()
	defer func() {
		stop()
		<-ran
	}()
	select {
	case <-ctx.Done():
		return nil
	case <-ran: // lost before the term began
		return nil
	case leading := <-won:
		writing, cancel := context.WithCancel(ctx)
		defer cancel()
		defer context.AfterFunc(leading, cancel)()
		c.Logger.Info("This replica writes the CRDs' conversion.", "kinds", c.kindNames(), "identity", c.Identity)
		defer c.Logger.Info("This replica no longer writes the CRDs' conversion.", "kinds", c.kindNames())
		return c.write(writing)
	}
}

// informers watch the named CRDs (by name: the RBAC may grant only the
// CRDs with converters) and signal every change on changed, without
// blocking.
func (c *Conversions) informers(names []string, changed chan<- struct{}) []toolscache.SharedIndexInformer {
	api := c.CRDs.ApiextensionsV1().CustomResourceDefinitions()
	signal := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	handler := toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { signal() },
		UpdateFunc: func(any, any) { signal() },
		DeleteFunc: func(any) { signal() },
	}
	out := make([]toolscache.SharedIndexInformer, 0, len(names))
	for _, name := range names {
		byName := func(o metav1.ListOptions) metav1.ListOptions {
			o.FieldSelector = "metadata.name=" + name
			return o
		}
		lw := &toolscache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return api.List(ctx, byName(o))
			},
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				return api.Watch(ctx, byName(o))
			},
		}
		inf := toolscache.NewSharedIndexInformerWithOptions(lw, &apiextensionsv1.CustomResourceDefinition{}, toolscache.SharedIndexInformerOptions{})
		_ = inf.SetWatchErrorHandlerWithContext(func(ctx context.Context, _ *toolscache.Reflector, err error) {
			if ctx.Err() == nil {
				c.Logger.Error(err, "Cannot watch the CRD; its changes are not seen until the watch works again.", "crd", name)
			}
		})
		_, _ = inf.AddEventHandler(handler)
		out = append(out, inf)
	}
	return out
}
