package bench

import (
	"context"
	"sync"
	"testing"
	"time"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/kopf-go/kopf/test/bench/internal/kex"
)

// maxCounter is the highest spec counter the workloads write.
const maxCounter = 10

// observer watches a namespace's objects, as any client could, and tells
// when they are handled or gone, whichever operator handles them: an
// object is handled at counter c once its status has the create handler's
// result and its last-handled annotation says spec.counter >= c. The
// moment a condition holds is the moment of the event that made it hold.
type observer struct {
	key    string // the last-handled annotation to read
	cancel context.CancelFunc
	done   chan struct{}

	mu sync.Mutex
	// handled is each present object's handled counter, -1 if unhandled.
	handled map[string]int
	// atLeast[c] counts the present objects handled at counter c or more.
	atLeast [maxCounter + 1]int
	gone    int
	waiters []*waiter
	// ring, if set, follows the objects' owners in a shard ring too.
	ring *ringView
}

type waiter struct {
	holds func(o *observer) bool
	at    chan time.Time
}

// observe starts watching the namespace; annotation is the variant's
// last-handled annotation.
func observe(tb testing.TB, namespace, annotation string) *observer {
	tb.Helper()
	return observeWith(tb, namespace, annotation, nil)
}

// observeWith starts watching the namespace, following the owners of a
// shard ring too if ring is set.
func observeWith(tb testing.TB, namespace, annotation string, ring *ringView) *observer {
	tb.Helper()
	c, err := cache.New(driverConfig(), cache.Options{Scheme: scheme(tb),
		DefaultNamespaces: map[string]cache.Config{namespace: {}}})
	if err != nil {
		tb.Fatal(err)
	}
	informer, err := c.GetInformer(context.Background(), &kex.KopfExample{})
	if err != nil {
		tb.Fatal(err)
	}
	o := &observer{key: annotation, handled: map[string]int{}, done: make(chan struct{}), ring: ring}
	if _, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { o.seen(obj) },
		UpdateFunc: func(_, obj any) { o.seen(obj) },
		DeleteFunc: func(obj any) { o.deleted(obj) },
	}); err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	o.cancel = cancel
	go func() {
		defer close(o.done)
		_ = c.Start(ctx)
	}()
	tb.Cleanup(o.stop)
	if !c.WaitForCacheSync(ctx) {
		tb.Fatal("the observer's cache did not sync")
	}
	return o
}

func (o *observer) stop() {
	o.cancel()
	<-o.done
}

func (o *observer) seen(obj any) {
	e, ok := obj.(*kex.KopfExample)
	if !ok {
		return
	}
	counter, handled := kex.HandledCounter(e, o.key)
	if !handled {
		counter = -1
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	prev, present := o.handled[e.Name]
	if !present {
		prev = -1
	}
	o.set(prev, counter)
	o.handled[e.Name] = counter
	if o.ring != nil {
		o.ring.seen(e)
	}
	o.check()
}

func (o *observer) deleted(obj any) {
	if tombstone, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	e, ok := obj.(*kex.KopfExample)
	if !ok {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if prev, present := o.handled[e.Name]; present {
		o.set(prev, -1)
		delete(o.handled, e.Name)
	}
	if o.ring != nil {
		o.ring.gone(e.Name)
	}
	o.gone++
	o.check()
}

// set moves an object's count from counter prev to next.
func (o *observer) set(prev, next int) {
	for c := 0; c <= maxCounter; c++ {
		if prev >= c {
			o.atLeast[c]--
		}
		if next >= c {
			o.atLeast[c]++
		}
	}
}

// check releases the waiters whose condition holds now.
func (o *observer) check() {
	now := time.Now()
	kept := o.waiters[:0]
	for _, w := range o.waiters {
		if w.holds(o) {
			w.at <- now
			continue
		}
		kept = append(kept, w)
	}
	o.waiters = kept
}

// await waits until the condition holds, and returns when it first did.
func (o *observer) await(tb testing.TB, what string, timeout time.Duration, holds func(o *observer) bool) time.Time {
	tb.Helper()
	w := &waiter{holds: holds, at: make(chan time.Time, 1)}
	o.mu.Lock()
	if holds(o) {
		o.mu.Unlock()
		return time.Now()
	}
	o.waiters = append(o.waiters, w)
	o.mu.Unlock()
	select {
	case at := <-w.at:
		return at
	case <-time.After(timeout):
		o.mu.Lock()
		defer o.mu.Unlock()
		tb.Fatalf("timed out after %s waiting until %s: %d present, %d handled, %d gone",
			timeout, what, len(o.handled), o.atLeast[0], o.gone)
		return time.Time{}
	}
}

// handledAll is the condition that n objects are handled at counter c.
func handledAll(n, c int) func(o *observer) bool {
	return func(o *observer) bool { return o.atLeast[c] >= n }
}

// goneAll is the condition that n objects are gone.
func goneAll(n int) func(o *observer) bool {
	return func(o *observer) bool { return o.gone >= n }
}
