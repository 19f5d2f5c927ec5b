package managed

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kopf-go/kopf/internal/admission"
	"github.com/kopf-go/kopf/internal/registry"
)

var kexGVK = schema.GroupVersionKind{Group: "kopf.dev", Version: "v1", Kind: "KopfExample"}

// kexKind returns a kind of unstructured KopfExamples in a fresh registry.
func kexKind() (*admission.Registry, *admission.Kind) {
	k := &admission.Kind{GVK: kexGVK, NewObject: func() registry.Object { return &unstructured.Unstructured{} }}
	return &admission.Registry{Kinds: []*admission.Kind{k}}, k
}

// addWebhook registers a handler that admits everything: the managed
// configurations look at which webhooks there are, not at what they do.
func addWebhook(k *admission.Kind, t admission.Type, id string, opts ...func(*admission.Handler)) {
	h := &admission.Handler{ID: id, Type: t, Fn: func(context.Context, registry.Object, *admission.Request) error { return nil }}
	for _, o := range opts {
		o(h)
	}
	k.Handlers = append(k.Handlers, h)
}

// knownKex knows the KopfExamples' resource.
func knownKex(*admission.Kind) (schema.GroupVersionResource, bool) {
	return schema.GroupVersionResource{Group: "kopf.dev", Version: "v1", Resource: "kopfexamples"}, true
}
