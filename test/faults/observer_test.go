package faults

import (
	"context"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// labelChange is an owner label's value as the observer saw it change.
type labelChange struct {
	object, value string
	at            time.Time
}

// observer watches the owner labels of a namespace's objects directly
// (no proxy) and keeps every value they take, to find owner labels that
// someone other than the ring wrote.
type observer struct {
	ns, key string
	c       client.WithWatch

	mu      sync.Mutex
	last    map[string]string
	changes []labelChange

	cancel context.CancelFunc
	done   chan struct{}
}

// observe starts watching; it stops when the test ends, or by stop.
func observe(t testing.TB, ns, key string) *observer {
	t.Helper()
	c, err := client.NewWithWatch(fixtures.env.Config, client.Options{Scheme: fixtures.env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	o := &observer{ns: ns, key: key, c: c, last: map[string]string{}, cancel: cancel, done: make(chan struct{})}
	go o.run(ctx)
	t.Cleanup(o.stop)
	return o
}

func (o *observer) stop() {
	o.cancel()
	<-o.done
}

// run lists and watches until ctx ends, listing again whenever a watch
// ends, so that no value goes unseen for long.
func (o *observer) run(ctx context.Context) {
	defer close(o.done)
	for ctx.Err() == nil {
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion("kopf.dev/v1")
		list.SetKind("KopfExampleList")
		if err := o.c.List(ctx, list, client.InNamespace(o.ns)); err != nil {
			sleep(ctx, 100*time.Millisecond)
			continue
		}
		for i := range list.Items {
			o.see(&list.Items[i])
		}
		w, err := o.c.Watch(ctx, list, client.InNamespace(o.ns), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: list.GetResourceVersion()}})
		if err != nil {
			sleep(ctx, 100*time.Millisecond)
			continue
		}
		o.follow(ctx, w)
	}
}

// follow reads a watch until it ends.
func (o *observer) follow(ctx context.Context, w watch.Interface) {
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.ResultChan():
			if !ok {
				return
			}
			if obj, isObj := ev.Object.(*unstructured.Unstructured); isObj && ev.Type != watch.Error {
				o.see(obj)
			}
		}
	}
}

// see records the object's label if it changed.
func (o *observer) see(obj *unstructured.Unstructured) {
	o.mu.Lock()
	defer o.mu.Unlock()
	name, value := obj.GetNamespace()+"/"+obj.GetName(), obj.GetLabels()[o.key]
	if prev, ok := o.last[name]; ok && prev == value {
		return
	}
	o.last[name] = value
	o.changes = append(o.changes, labelChange{object: name, value: value, at: time.Now()})
}

// written are the label changes to any of the values.
func (o *observer) written(values map[string]bool) []labelChange {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []labelChange
	for _, c := range o.changes {
		if values[c.value] {
			out = append(out, c)
		}
	}
	return out
}
