package handlers

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/internal/admission"
	"github.com/kopf-go/kopf/internal/registry"
)

// AdmissionRequest is what a webhook handler learns beside its object.
// Its fields:
//
//	HandlerID         string                the handler's id
//	Param             any                   the value it was registered with (Param)
//	Type              validating or mutating
//	UID               types.UID             the admission request's
//	Operation         AdmissionOperation    CREATE, UPDATE, DELETE or CONNECT
//	DryRun            bool                  nothing is persisted: skip side effects
//	UserInfo          authenticationv1.UserInfo  who makes the API request
//	Subresource       string                "status", "scale", or "" for the resource
//	Resource          schema.GroupVersionResource
//	Name, Namespace   string
//	Body              map[string]any        the new object, or the old one on deletion
//	Old, New          map[string]any        before and after; nil when absent
//	Diff              Diff                  from Old to New
//	Headers           http.Header           of the API server's HTTP request
//	PeerCertificates  []*x509.Certificate   the API server's client certificates
//	Warnings          []string              returned to the client; add with Warn
//	Patch             *Patch                a mutator's changes, rendered as a JSONPatch
//
// pkg/handlertest builds requests for unit tests (Admission).
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
	OperationCreate  AdmissionOperation = admission.Create
	OperationUpdate  AdmissionOperation = admission.Update
	OperationDelete  AdmissionOperation = admission.Delete
	OperationConnect AdmissionOperation = admission.Connect
)

// AdmissionFunc is a validating or mutating handler. A mutating handler
// changes the object through r.Patch; a nil error admits the request.
// The logger is in ctx (logr.FromContextOrDiscard).
type AdmissionFunc[T client.Object] func(ctx context.Context, obj T, r *AdmissionRequest) error

// OnValidate registers a validating admission handler: the API server asks
// it before it persists an object; an error denies the operation. Its id
// is the last segment(s) of the webhook's URL path (with a Field, the id
// becomes "<id>/<field>"). Serve it with SetupWebhooksWithManager.
func OnValidate[T client.Object](res *Resource[T], id string, fn AdmissionFunc[T], opts ...WebhookOption) {
	h := newWebhook(id, admission.Validating, fn)
	applyAll(target{filters: &h.Filters, webhook: h}, opts)
	res.addWebhook(h)
}

// OnMutate registers a mutating admission handler: it changes objects on
// their way in through r.Patch (rendered as a JSONPatch). It does not see
// deletions unless its operations are exactly OperationDelete.
func OnMutate[T client.Object](res *Resource[T], id string, fn AdmissionFunc[T], opts ...WebhookOption) {
	h := newWebhook(id, admission.Mutating, fn)
	applyAll(target{filters: &h.Filters, webhook: h}, opts)
	res.addWebhook(h)
}

// newWebhook adapts fn to the engine's untyped objects.
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
// Kopf) and stores it with the resource's webhook handlers.
func (res *Resource[T]) addWebhook(h *admission.Handler) {
	if len(h.Field) > 0 {
		h.ID = registry.FieldID(h.ID, h.Field)
	}
	r := res.res
	if r.kind.Selector != nil {
		res.reg.reg.Fail(fmt.Errorf("%s: webhook %q: admission webhooks need a kind known at setup (For or ForKind), not a selector resolved while running", r.name, h.ID))
		return
	}
	if r.webhooks == nil {
		r.webhooks = &admission.Kind{GVK: r.kind.GVK, NewObject: r.kind.NewObject}
		res.reg.webhooks.Kinds = append(res.reg.webhooks.Kinds, r.webhooks)
	}
	r.webhooks.Handlers = append(r.webhooks.Handlers, h)
}

// webhookOption is an option of webhook handlers only. The filters apply
// to webhook handlers too (they test the request's body: the new object,
// or the old one on deletion); the limits do not: webhooks answer at
// once, and any error denies the request.
type webhookOption func(*admission.Handler)

func (o webhookOption) apply(t *target) { o(t.webhook) }
func (webhookOption) webhook()          {}

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
// other filters. T must be the resource's object type.
func WhenRequest[T client.Object](fn func(obj T, r *AdmissionRequest) bool) WebhookOption {
	return webhookOption(func(h *admission.Handler) {
		h.WhenRequest = func(obj registry.Object, r *admission.Request) bool {
			typed, ok := obj.(T)
			return ok && fn(typed, r)
		}
	})
}
