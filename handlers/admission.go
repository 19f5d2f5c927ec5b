package handlers

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	engine "github.com/kopf-go/kopf/internal/admission"
	"github.com/kopf-go/kopf/internal/registry"
	"github.com/kopf-go/kopf/pkg/admission"
)

// AdmissionFunc is a validating or mutating handler: it gets its object
// and the admission request (admission.Request, pkg/admission: the
// operation, the user, old and new bodies, warnings). A mutating handler
// changes the object through r.Patch; a nil error admits the request, an
// admission.Error denies it with a code. The logger is in ctx
// (logr.FromContextOrDiscard). pkg/handlertest builds requests for unit
// tests (Admission).
type AdmissionFunc[T client.Object] func(ctx context.Context, obj T, r *admission.Request) error

// OnValidate registers a validating admission handler: the API server asks
// it before it persists an object; an error denies the operation. Its id
// is the last segment(s) of the webhook's URL path (with a Field, the id
// becomes "<id>/<field>"). Serve it with SetupWebhooksWithManager.
func OnValidate[T client.Object](res *Resource[T], id string, fn AdmissionFunc[T], opts ...WebhookOption) {
	h := newWebhook(id, engine.Validating, fn)
	applyAll(target{filters: &h.Filters, webhook: h}, opts)
	res.addWebhook(h)
}

// OnMutate registers a mutating admission handler: it changes objects on
// their way in through r.Patch (rendered as a JSONPatch). It does not see
// deletions unless its operations are exactly admission.Delete.
func OnMutate[T client.Object](res *Resource[T], id string, fn AdmissionFunc[T], opts ...WebhookOption) {
	h := newWebhook(id, engine.Mutating, fn)
	applyAll(target{filters: &h.Filters, webhook: h}, opts)
	res.addWebhook(h)
}

// newWebhook adapts fn to the engine's untyped objects.
func newWebhook[T client.Object](id string, t admission.Type, fn AdmissionFunc[T]) *engine.Handler {
	h := &engine.Handler{ID: id, Type: t}
	if fn != nil {
		h.Fn = func(ctx context.Context, obj registry.Object, r *admission.Request) error {
			return fn(ctx, obj.(T), r)
		}
	}
	return h
}

// addWebhook finishes the handler's id (a field adds "/<field>", as in
// Kopf) and stores it with the resource's webhook handlers.
func (res *Resource[T]) addWebhook(h *engine.Handler) {
	if len(h.Field) > 0 {
		h.ID = registry.FieldID(h.ID, h.Field)
	}
	r := res.res
	if r.kind.Selector != nil {
		res.reg.reg.Fail(fmt.Errorf("%s: webhook %q: admission webhooks need a kind known at setup (For or ForKind), not a selector resolved while running", r.name, h.ID))
		return
	}
	if r.webhooks == nil {
		r.webhooks = &engine.Kind{GVK: r.kind.GVK, NewObject: r.kind.NewObject}
		res.reg.webhooks.Kinds = append(res.reg.webhooks.Kinds, r.webhooks)
	}
	r.webhooks.Handlers = append(r.webhooks.Handlers, h)
}

// webhookOption is an option of webhook handlers only. The filters apply
// to webhook handlers too (they test the request's body: the new object,
// or the old one on deletion); the limits do not: webhooks answer at
// once, and any error denies the request.
type webhookOption func(*engine.Handler)

func (o webhookOption) apply(t *target) { o(t.webhook) }
func (webhookOption) webhook()          {}

// Operations limits the operations the webhook is called for (default:
// all). Operations() with none is a registration error, as in Kopf.
func Operations(ops ...admission.Operation) WebhookOption {
	list := append([]admission.Operation{}, ops...)
	return webhookOption(func(h *engine.Handler) { h.Operations = list })
}

// Subresource makes the handler serve a subresource ("status", "scale")
// instead of the main resource, or "*" for the main resource and all
// subresources (r.Subresource tells which).
func Subresource(name string) WebhookOption {
	return webhookOption(func(h *engine.Handler) { h.Subresource = name })
}

// Persistent keeps the handler's webhook in the managed configuration when
// the operator exits (by default only the operator's lifetime).
func Persistent() WebhookOption {
	return webhookOption(func(h *engine.Handler) { h.Persistent = true })
}

// SideEffects declares that the handler has side effects, which it skips
// on dry runs (r.DryRun): sideEffects NoneOnDryRun instead of None.
func SideEffects() WebhookOption {
	return webhookOption(func(h *engine.Handler) { h.SideEffects = true })
}

// IgnoreFailures admits requests when the webhook cannot be called or
// fails to answer (failurePolicy Ignore instead of Fail).
func IgnoreFailures() WebhookOption {
	return webhookOption(func(h *engine.Handler) { h.IgnoreFailures = true })
}

// WhenRequest runs the handler only if fn returns true for the object and
// the request (operation, user, dry run, ...); it is evaluated after all
// other filters. T must be the resource's object type.
func WhenRequest[T client.Object](fn func(obj T, r *admission.Request) bool) WebhookOption {
	return webhookOption(func(h *engine.Handler) {
		h.WhenRequest = func(obj registry.Object, r *admission.Request) bool {
			typed, ok := obj.(T)
			return ok && fn(typed, r)
		}
	})
}
