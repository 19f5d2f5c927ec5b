package integration

import (
	"context"
	"slices"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

var kexResource = schema.GroupVersionResource{Group: "kopf.dev", Version: "v1", Resource: "kopfexamples"}

// versions records every version of the example objects in a namespace,
// as a watch delivers them, so that tests can assert on intermediate
// states (what each write put on the object), not only on the last one.
type versions struct {
	t     *testing.T
	dyn   dynamic.ResourceInterface
	mu    sync.Mutex
	items []*unstructured.Unstructured
}

// recordVersions watches the namespace until the test ends.
func recordVersions(t *testing.T, namespace string) *versions {
	t.Helper()
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	objects := dyn.Resource(kexResource).Namespace(namespace)
	w, err := objects.Watch(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	v := &versions{t: t, dyn: objects}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			if obj, ok := ev.Object.(*unstructured.Unstructured); ok {
				v.mu.Lock()
				v.items = append(v.items, obj)
				v.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		w.Stop()
		<-done
	})
	return v
}

// all returns the versions seen so far, oldest first, once the watch has
// delivered the current version of every object in the namespace: the
// watch may lag behind what the test waited for (the operator's log).
func (v *versions) all() []*unstructured.Unstructured {
	v.t.Helper()
	list, err := v.dyn.List(context.Background(), metav1.ListOptions{})
	if err != nil {
		v.t.Fatal(err)
	}
	eventually(v.t, "the watch of the versions to catch up", func() bool {
		seen := v.seen()
		for _, obj := range list.Items {
			if !slices.ContainsFunc(seen, func(s *unstructured.Unstructured) bool {
				return s.GetUID() == obj.GetUID() && s.GetResourceVersion() == obj.GetResourceVersion()
			}) {
				return false
			}
		}
		return true
	})
	return v.seen()
}

func (v *versions) seen() []*unstructured.Unstructured {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]*unstructured.Unstructured(nil), v.items...)
}

// annotation returns the values an annotation had across the versions,
// skipping versions without it.
func (v *versions) annotation(key string) []string {
	var out []string
	for _, obj := range v.all() {
		if value, ok := obj.GetAnnotations()[key]; ok {
			out = append(out, value)
		}
	}
	return out
}
