package integration

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/kopf-go/kopf/handlers"
	"github.com/kopf-go/kopf/pkg/kopftest"

	"github.com/kopf-go/kopf/pkg/cause"
)

// checkLeaks fails the test if goroutines started after this call are
// still running when the test ends (after its operators have stopped).
func checkLeaks(t *testing.T) {
	t.Helper()
	kopftest.NoLeaks(t)
}

// kex returns the example kind in a fresh registry.
func kex() (*handlers.Registry, *handlers.Resource[*unstructured.Unstructured]) {
	reg := handlers.NewRegistry()
	return reg, handlers.ForKind(reg, "kopf.dev", "v1", "KopfExample")
}

// exampleObject returns the example object (examples/obj.yaml) in a namespace.
func exampleObject(t *testing.T, namespace string) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(exampleYAML), &obj.Object); err != nil {
		t.Fatal(err)
	}
	obj.SetNamespace(namespace)
	return obj
}

const exampleYAML = `
apiVersion: kopf.dev/v1
kind: KopfExample
metadata:
  name: kopf-example-1
  labels:
    somelabel: somevalue
  annotations:
    someannotation: somevalue
spec:
  duration: 1m
  field: value
  items:
  - item1
  - item2
`

func create(t *testing.T, obj *unstructured.Unstructured) {
	t.Helper()
	if err := env.Client.Create(context.Background(), obj); err != nil {
		t.Fatalf("create %s: %v", obj.GetName(), err)
	}
}

func get(t *testing.T, namespace, name string) *unstructured.Unstructured {
	t.Helper()
	obj := kexRef(namespace, name)
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
		t.Fatalf("get %s: %v", name, err)
	}
	return obj
}

// kexRef returns a KopfExample that holds only its name and namespace:
// what a Get fills in and what a Patch addresses.
func kexRef(namespace, name string) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion("kopf.dev/v1")
	obj.SetKind("KopfExample")
	obj.SetNamespace(namespace)
	obj.SetName(name)
	return obj
}

// eventually polls cond until it returns true, failing the test after
// 30 s. Tests wait for outcomes; they never assert on durations.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	kopftest.Eventually(t, what, 30*time.Second, cond)
}

// calls records handler invocations, safe for concurrent use.
type calls struct {
	mu    sync.Mutex
	items []call
}

type call struct {
	ID     string
	Reason cause.Reason
	Retry  int
	Old    any
	New    any
	Diff   string
	At     time.Time
}

func (c *calls) add(cause *cause.Change) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.items = append(c.items, call{ID: cause.HandlerID, Reason: cause.Reason, Retry: cause.Retry,
		Old: cause.Old, New: cause.New, Diff: cause.Diff.String(), At: time.Now()})
}

// record is a change handler that adds its call to c and does nothing
// else, for tests that only look at which handlers ran and how.
func (c *calls) record(ctx context.Context, obj *unstructured.Unstructured, cause *cause.Change) (any, error) {
	c.add(cause)
	return nil, nil
}

// nothing is a change handler that does nothing: it is there for the
// engine to run it, or, as a delete handler, to make the engine keep its
// finalizer on the object.
func nothing(ctx context.Context, obj *unstructured.Unstructured, c *cause.Change) (any, error) {
	return nil, nil
}

func (c *calls) of(id string) []call {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []call
	for _, item := range c.items {
		if item.ID == id {
			out = append(out, item)
		}
	}
	return out
}

func (c *calls) all() []call {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]call(nil), c.items...)
}

// gone reports whether the example object no longer exists.
func gone(t *testing.T, namespace, name string) bool {
	t.Helper()
	obj := kexRef(namespace, name)
	err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)
	if apierrors.IsNotFound(err) {
		return true
	}
	if err != nil {
		t.Fatalf("get %s: %v", name, err)
	}
	return false
}

// decodeRecord parses a progress annotation.
func decodeRecord(t *testing.T, raw string) map[string]any {
	t.Helper()
	var out map[string]any
	if err := json.Unmarshal([]byte(raw), &out); err != nil {
		t.Fatalf("progress record %q: %v", raw, err)
	}
	return out
}
