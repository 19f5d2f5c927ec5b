package admission

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kopf-go/kopf/internal/registry"
)

var kexGVK = schema.GroupVersionKind{Group: "kopf.dev", Version: "v1", Kind: "KopfExample"}

// kexKind returns a kind of unstructured KopfExamples in a fresh registry.
func kexKind() (*Registry, *Kind) {
	k := &Kind{GVK: kexGVK, NewObject: func() registry.Object { return &unstructured.Unstructured{} }}
	return &Registry{Kinds: []*Kind{k}}, k
}

// calls records the handlers' calls, safely for concurrent servers.
type calls struct {
	mu   sync.Mutex
	ids  []string
	reqs []*Request
	objs []registry.Object
}

func (c *calls) record(id string, obj registry.Object, r *Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ids = append(c.ids, id)
	c.reqs = append(c.reqs, r)
	c.objs = append(c.objs, obj)
}

func (c *calls) IDs() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.ids...)
}

// add registers a handler that records its calls and then does what fn
// says (fn may be nil).
func (c *calls) add(k *Kind, t Type, id string, fn func(r *Request) error, opts ...func(*Handler)) *Handler {
	h := &Handler{ID: id, Type: t, Fn: func(_ context.Context, obj registry.Object, r *Request) error {
		c.record(id, obj, r)
		if fn != nil {
			return fn(r)
		}
		return nil
	}}
	for _, o := range opts {
		o(h)
	}
	k.Handlers = append(k.Handlers, h)
	return h
}

// admissionRequest builds a request for a KopfExample, as Kopf's tests do.
func admissionRequest(t *testing.T, op Operation, obj, old map[string]any) *admissionv1.AdmissionRequest {
	t.Helper()
	return &admissionv1.AdmissionRequest{
		UID:       "uid1",
		Kind:      metav1.GroupVersionKind{Group: "kopf.dev", Version: "v1", Kind: "KopfExample"},
		Resource:  metav1.GroupVersionResource{Group: "kopf.dev", Version: "v1", Resource: "kopfexamples"},
		UserInfo:  authenticationv1.UserInfo{Username: "user1", UID: "useruid1", Groups: []string{"group1"}},
		Name:      "name1",
		Namespace: "ns1",
		Operation: op,
		Object:    raw(t, obj),
		OldObject: raw(t, old),
	}
}

func raw(t *testing.T, obj map[string]any) runtime.RawExtension {
	t.Helper()
	if obj == nil {
		return runtime.RawExtension{}
	}
	data, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return runtime.RawExtension{Raw: data}
}

// kexBody is an example object with a label and a field.
func kexBody() map[string]any {
	return m{
		"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
		"metadata": m{"name": "name1", "namespace": "ns1", "labels": m{"somelabel": "somevalue"}, "annotations": m{"note": "x"}},
		"spec":     m{"field": "value"},
	}
}
