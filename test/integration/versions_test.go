package integration

import (
	"context"
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
	w, err := dyn.Resource(kexResource).Namespace(namespace).Watch(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	v := &versions{}
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

// all returns the versions seen so far, oldest first.
func (v *versions) all() []*unstructured.Unstructured {
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
