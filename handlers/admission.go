package handlers

import (
	"context"
	"runtime"
	"sync"
	"weak"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/internal/admission"
	"github.com/kopf-go/kopf/internal/execution"
	"github.com/kopf-go/kopf/internal/registry"
)

// AdmissionRequest is what a webhook handler learns beside its object: the
// operation, dry run, the user, the subresource, old/new bodies and their
// diff, the HTTP headers, warnings to return, and a patch (for mutators).
type AdmissionRequest = admission.Request

// AdmissionError denies an API request with a message and a status code
// for the API client (zero: 500). Any error denies the request; this one
// is preferred when several handlers fail, and it alone sets the code:
//
//	return handlers.AdmissionError{Message: "spec.field is not allowed", Code: 422}
type AdmissionError = admission.Error

// AdmissionOperation is an API operation under admission.
type AdmissionOperation = admission.Operation

// The operations a webhook can be called for.
const (
	OperationCreate  = admission.Create
	OperationUpdate  = admission.Update
	OperationDelete  = admission.Delete
	OperationConnect = admission.Connect
)

// AdmissionFunc is a validating or mutating handler. A mutating handler
// changes the object through r.Patch; a nil error admits the request.
// The logger is in ctx (logr.FromContextOrDiscard).
type AdmissionFunc[T client.Object] func(ctx context.Context, obj T, r *AdmissionRequest) error

// ValidateOption configures an OnValidate handler.
type ValidateOption interface {
	applyWebhook(*admission.Handler)
	validating()
}

// MutateOption configures an OnMutate handler.
type MutateOption interface {
	applyWebhook(*admission.Handler)
	mutating()
}

// WebhookOption is an option of both validating and mutating handlers.
type WebhookOption interface {
	applyWebhook(*admission.Handler)
	validating()
	mutating()
}

// OnValidate registers a validating admission handler: the API server asks
// it before it persists an object; an error denies the operation. Its id
// is the last segment(s) of the webhook's URL path (with a Field, the id
// becomes "<id>/<field>"). Serve it with SetupWebhooksWithManager.
func OnValidate[T client.Object](k *Kind[T], id string, fn AdmissionFunc[T], opts ...ValidateOption) {
	h := newWebhook(id, admission.Validating, fn)
	for _, o := range opts {
		o.applyWebhook(h)
	}
	k.addWebhook(h)
}

// OnMutate registers a mutating admission handler: it changes objects on
// their way in through r.Patch (rendered as a JSONPatch). It does not see
// deletions unless its operations are exactly OperationDelete.
func OnMutate[T client.Object](k *Kind[T], id string, fn AdmissionFunc[T], opts ...MutateOption) {
	h := newWebhook(id, admission.Mutating, fn)
	for _, o := range opts {
		o.applyWebhook(h)
	}
	k.addWebhook(h)
}

func newWebhook[T client.Object](id string, t admission.Type, fn AdmissionFunc[T]) *admission.Handler {
	h := &admission.Handler{ID: id, Type: t}
	if fn != nil {
		h.Fn = func(ctx context.Context, obj registry.Object, r *admission.Request) error {
			return fn(ctx, obj.(T), r)
		}
	}
	return h
}

// addWebhook finishes the handler's id (a field adds "/<field>", as in
// Kopf) and stores it with the kind.
func (k *Kind[T]) addWebhook(h *admission.Handler) {
	if len(h.Field) > 0 {
		h.ID = registry.FieldID(h.ID, h.Field)
	}
	store := webhooksOf(k.reg)
	store.mu.Lock()
	defer store.mu.Unlock()
	ak, ok := store.kinds[k.kind]
	if !ok {
		ak = &admission.Kind{GVK: k.kind.GVK, NewObject: k.kind.NewObject}
		store.kinds[k.kind] = ak
		store.reg.Kinds = append(store.reg.Kinds, ak)
	}
	ak.Handlers = append(ak.Handlers, h)
}

// webhookStore keeps a registry's webhook handlers. It lives beside the
// Registry rather than in it while registry.Kind is being reworked; the
// intent is a list of webhook handlers per registry.Kind (with the handler
// type moved into pkg/registry), which makes this side map, and the copy
// of GVK and NewObject in admission.Kind, unnecessary.
type webhookStore struct {
	mu    sync.Mutex
	reg   admission.Registry
	kinds map[*registry.Kind]*admission.Kind
}

// webhookStores maps registries to their webhook handlers. The keys are
// weak, and an entry goes when its registry is collected.
var webhookStores = struct {
	sync.Mutex
	m map[weak.Pointer[Registry]]*webhookStore
}{m: map[weak.Pointer[Registry]]*webhookStore{}}

// webhooksOf returns the registry's webhook store, making it on first use.
func webhooksOf(r *Registry) *webhookStore {
	key := weak.Make(r)
	webhookStores.Lock()
	defer webhookStores.Unlock()
	if s, ok := webhookStores.m[key]; ok {
		return s
	}
	s := &webhookStore{kinds: map[*registry.Kind]*admission.Kind{}}
	webhookStores.m[key] = s
	runtime.AddCleanup(r, func(key weak.Pointer[Registry]) {
		webhookStores.Lock()
		defer webhookStores.Unlock()
		delete(webhookStores.m, key)
	}, key)
	return s
}

// The filters Field, Value and When apply to webhook handlers too: they
// test the request's body (the new object, or the old one on deletion).
// Retries, Backoff, Timeout and Errors do not: webhooks answer at once,
// and any error denies the request.
func (o Option) applyWebhook(h *admission.Handler) { o(&execution.Handler{}, &h.Filters) }
func (Option) validating()                         {}
func (Option) mutating()                           {}

func (l Labels) applyWebhook(h *admission.Handler)      { h.Labels = l }
func (Labels) validating()                              {}
func (Labels) mutating()                                {}
func (a Annotations) applyWebhook(h *admission.Handler) { h.Annotations = a }
func (Annotations) validating()                         {}
func (Annotations) mutating()                           {}

// webhookOption is an option of webhook handlers only.
type webhookOption func(*admission.Handler)

func (o webhookOption) applyWebhook(h *admission.Handler) { o(h) }
func (webhookOption) validating()                         {}
func (webhookOption) mutating()                           {}

// Operations limits the operations the webhook is called for (default:
// all). Operations() with none is a registration error, as in Kopf.
func Operations(ops ...AdmissionOperation) WebhookOption {
	list := append([]AdmissionOperation{}, ops...)
	return webhookOption(func(h *admission.Handler) { h.Operations = list })
}

// Subresource makes the handler serve a subresource ("status", "scale")
// instead of the main resource, or "*" for the main resource and all
// subresources (r.Subresource tells which).
func Subresource(name string) WebhookOption {
	return webhookOption(func(h *admission.Handler) { h.Subresource = name })
}

// Persistent keeps the handler's webhook in the managed configuration when
// the operator exits (by default only the operator's lifetime).
func Persistent() WebhookOption {
	return webhookOption(func(h *admission.Handler) { h.Persistent = true })
}

// SideEffects declares that the handler has side effects, which it skips
// on dry runs (r.DryRun): sideEffects NoneOnDryRun instead of None.
func SideEffects() WebhookOption {
	return webhookOption(func(h *admission.Handler) { h.SideEffects = true })
}

// IgnoreFailures admits requests when the webhook cannot be called or
// fails to answer (failurePolicy Ignore instead of Fail).
func IgnoreFailures() WebhookOption {
	return webhookOption(func(h *admission.Handler) { h.IgnoreFailures = true })
}

// WhenRequest runs the handler only if fn returns true for the object and
// the request (operation, user, dry run, ...); it is evaluated after all
// other filters. T must be the kind's object type.
func WhenRequest[T client.Object](fn func(obj T, r *AdmissionRequest) bool) WebhookOption {
	return webhookOption(func(h *admission.Handler) {
		h.WhenRequest = func(obj registry.Object, r *admission.Request) bool {
			typed, ok := obj.(T)
			return ok && fn(typed, r)
		}
	})
}
