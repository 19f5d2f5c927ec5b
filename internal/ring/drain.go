package ring

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
)

// newInformer makes the term cache's informers as controller-runtime
// does, with watches that drain on Stop. controller-runtime passes
// metadata-only watches through watch.Filter, whose goroutine blocks for
// good on an event that arrived after the reflector stopped reading
// (kubernetes/kubernetes#113254): every term that ends while objects
// change would leak one.
func newInformer(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
	return toolscache.NewSharedIndexInformer(drainingLW{toolscache.ToListerWatcherWithContext(lw)}, obj, resync, indexers)
}

// drainingLW lists and watches as its ListerWatcher does; its watches
// drain on Stop.
type drainingLW struct {
	lw toolscache.ListerWatcherWithContext
}

func (d drainingLW) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	return d.lw.ListWithContext(ctx, opts)
}

func (d drainingLW) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	w, err := d.lw.WatchWithContext(ctx, opts)
	if err != nil {
		return nil, err
	}
	return draining{w}, nil
}

// List and Watch serve callers without a context, which the reflector
// is not.
func (d drainingLW) List(opts metav1.ListOptions) (runtime.Object, error) {
	return d.ListWithContext(context.Background(), opts)
}

func (d drainingLW) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return d.WatchWithContext(context.Background(), opts)
}

// draining is a watch whose Stop reads what is left of its results:
// stopping closes the stream, so the results end soon.
type draining struct {
	watch.Interface
}

func (d draining) Stop() {
	d.Interface.Stop()
	for range d.ResultChan() {
	}
}
