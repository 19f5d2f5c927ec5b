// Package admission serves Kubernetes admission reviews with Kopf's
// semantics: validating and mutating handlers per kind, selected by the
// handler id in the URL path, all run at once with any error being final,
// the best error reported back, and the mutators' patches rendered as one
// JSONPatch. It also keeps the cluster's webhook configurations in line with
// the handlers (Kopf's settings.admission.managed).
package admission

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/kopf-go/kopf/pkg/admission"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kopf-go/kopf/internal/registry"
)

// Type says whether a handler validates or mutates (admission.Type).
type Type = admission.Type

// The handler types, with Kopf's names.
const (
	Validating = admission.Validating
	Mutating   = admission.Mutating
)

// Operation is an API operation under admission: CREATE, UPDATE, DELETE or
// CONNECT.
type Operation = admission.Operation

// The operations.
const (
	Create  = admission.Create
	Update  = admission.Update
	Delete  = admission.Delete
	Connect = admission.Connect
)

// AnySubresource makes a handler serve the main resource and all its
// subresources.
const AnySubresource = "*"

// Func is a webhook handler, adapted to untyped objects. An error denies
// the request; there are no retries.
type Func func(ctx context.Context, obj registry.Object, r *Request) error

// Handler is one registered validating or mutating handler.
type Handler struct {
	// ID selects the handler from the URL path (<path>/<id>) and names its
	// webhook in managed configurations.
	ID   string
	Type Type
	// Param is the value the handler was registered with, handed to it in
	// its request.
	Param any
	// Operations the handler's webhook is called for; nil means all. A
	// non-nil empty list is a registration error, as in Kopf.
	Operations []Operation
	// Subresource is "" for the main resource only, "*" for the main
	// resource and any subresource, or a subresource's name ("status").
	Subresource string
	// Persistent keeps the webhook in a managed configuration when the
	// operator exits.
	Persistent bool
	// SideEffects declares the handler's side effects, which it must skip on
	// dry runs (sideEffects: NoneOnDryRun instead of None).
	SideEffects bool
	// IgnoreFailures lets the API server admit the request when the webhook
	// is unreachable or fails (failurePolicy: Ignore instead of Fail).
	IgnoreFailures bool
	// Filters test the object (the new one, or the old one on deletion).
	// Field and Value test that one body: there is no change to compare.
	registry.Filters
	// WhenRequest, if set, is evaluated last, with the whole request.
	WhenRequest func(obj registry.Object, r *Request) bool
	Fn          Func
}

// Kind is one resource kind and its webhook handlers.
type Kind struct {
	// GVK identifies the kind. Requests are matched to it by their
	// resource (through a REST mapper) or, without one, by their kind.
	GVK schema.GroupVersionKind
	// NewObject returns an empty object of the kind's Go type, into which
	// request bodies are decoded.
	NewObject func() registry.Object
	// Handlers in registration order.
	Handlers []*Handler
}

// Registry is every kind with webhook handlers.
type Registry struct {
	Kinds []*Kind
	errs  []error
}

// Fail records a registration problem, reported later by Validate.
func (r *Registry) Fail(err error) { r.errs = append(r.errs, err) }

// Validate reports every registration problem at once.
func (r *Registry) Validate() error {
	errs := append([]error(nil), r.errs...)
	for _, k := range r.Kinds {
		seen := map[Type]map[string]bool{}
		for _, h := range k.Handlers {
			errs = append(errs, h.validate(k)...)
			if seen[h.Type] == nil {
				seen[h.Type] = map[string]bool{}
			}
			if seen[h.Type][h.ID] {
				errs = append(errs, fmt.Errorf("%s: %s handler id %q is registered twice", k.GVK.Kind, h.Type, h.ID))
			}
			seen[h.Type][h.ID] = true
		}
	}
	return errors.Join(errs...)
}

var knownOperations = []Operation{Create, Update, Delete, Connect}

func (h *Handler) validate(k *Kind) []error {
	var errs []error
	fail := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s handler %q: %s", k.GVK.Kind, h.Type, h.ID, fmt.Sprintf(format, args...)))
	}
	if h.ID == "" {
		fail("the id is required")
	}
	if h.Type != Validating && h.Type != Mutating {
		fail("unknown type %q", h.Type)
	}
	if h.Operations != nil && len(h.Operations) == 0 {
		fail("operations must be either unset or non-empty")
	}
	for _, op := range h.Operations {
		if !slices.Contains(knownOperations, op) {
			fail("unknown operation %q (want CREATE, UPDATE, DELETE or CONNECT)", op)
		}
	}
	if h.Value.IsSet() && len(h.Field) == 0 {
		fail("a value filter needs a field")
	}
	if h.Fn == nil {
		fail("no function")
	}
	return errs
}

// onlyDeletion reports whether the handler is for DELETE and nothing else,
// which is what lets a mutating handler see deletions.
func (h *Handler) onlyDeletion() bool {
	if len(h.Operations) == 0 {
		return false
	}
	for _, op := range h.Operations {
		if op != Delete {
			return false
		}
	}
	return true
}
