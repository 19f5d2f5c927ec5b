package admission

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kopf-go/kopf/internal/contain"
	"github.com/kopf-go/kopf/internal/execution"
	"github.com/kopf-go/kopf/internal/metrics"
	"github.com/kopf-go/kopf/internal/registry"
	"github.com/kopf-go/kopf/pkg/fields"
	"github.com/kopf-go/kopf/pkg/patch"
)

// UnknownResourceError is a review of a resource that no handler serves.
type UnknownResourceError struct{ Resource string }

func (e *UnknownResourceError) Error() string {
	return fmt.Sprintf("the resource has no handlers: %s", e.Resource)
}

// AmbiguousResourceError is a review of a resource that several registered
// kinds match.
type AmbiguousResourceError struct{ Resource string }

func (e *AmbiguousResourceError) Error() string {
	return fmt.Sprintf("the resource is ambiguous: %s", e.Resource)
}

// Input is one admission request as the webhook server received it.
type Input struct {
	Request *admissionv1.AdmissionRequest
	// New and Old are the request's objects, decoded already: the webhook
	// server decodes a review in one pass. When both are nil, they are
	// decoded from the request's raw objects.
	New, Old map[string]any
	// Hint narrows the handlers (the id from the URL path).
	Hint Hint
	// Headers and PeerCertificates come from the HTTP request.
	Headers          http.Header
	PeerCertificates []*x509.Certificate
}

// Review runs the handlers that the request selects, all of them, and
// builds the response: allowed when none failed, the handlers' warnings,
// the best error's message and code, and the mutating handlers' patches as
// one JSONPatch. Its errors are about the webhook call itself
// (MissingDataError, UnknownResourceError, AmbiguousResourceError, an
// undecodable object), not about the API request under review.
func Review(ctx context.Context, reg *Registry, mapper meta.RESTMapper, in Input) (*admissionv1.AdmissionResponse, error) {
	r, err := newRequest(in)
	if err != nil {
		return nil, err
	}
	kind, err := findKind(reg, mapper, in.Request)
	if err != nil {
		return nil, err
	}
	obj, err := decodeObject(kind, r.Body)
	if err != nil {
		return nil, fmt.Errorf("decode the %s: %w", kind.GVK.Kind, err)
	}
	log := logr.FromContextOrDiscard(ctx).WithValues("kind", kind.GVK.Kind, "namespace", r.Namespace, "name", r.Name,
		"operation", r.Operation)
	kindLabel := metrics.Kind(kind.GVK)
	// A filter's panic denies the request (fail closed): a validating
	// handler that cannot tell whether it applies must not let the
	// request through, as an exception in a filter fails Kopf's webhook.
	var errs []error
	selected := kind.Select(in.Hint, obj, r, func(h *Handler, p *contain.Panic) {
		log.Error(p, fmt.Sprintf("Handler '%s' is not called: its filter panicked, and the request is denied: %s", h.ID, p),
			"handler", h.ID, "stack", string(p.Stack))
		metrics.CallbackPanicked(kindLabel, metrics.CallbackFilter, h.ID)
		errs = append(errs, p)
	})

	resp := &admissionv1.AdmissionResponse{UID: in.Request.UID}
	var patches []*patch.Patch
	for i, h := range selected {
		hr := forHandler(r, h)
		err := call(logr.NewContext(ctx, log.WithValues("handler", h.ID)), h, objectFor(obj, selected, i), hr)
		if _, panicked := err.(*contain.Panic); panicked {
			metrics.CallbackPanicked(kindLabel, metrics.CallbackWebhook, h.ID)
		}
		metrics.WebhookCalled(kindLabel, string(h.Type), h.ID, outcomeOf(err))
		errs = append(errs, err)
		resp.Warnings = append(resp.Warnings, hr.Warnings...)
		if h.Type == Mutating {
			patches = append(patches, hr.Patch)
		}
	}
	if len(patches) > 0 {
		ops, err := JSONPatch(r.Body, patches...)
		if err == nil && len(ops) > 0 {
			resp.Patch, err = json.Marshal(ops)
			pt := admissionv1.PatchTypeJSONPatch
			resp.PatchType = &pt
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	best := bestError(errs)
	resp.Allowed = best == nil
	if best != nil {
		message, code := statusOf(best)
		resp.Result = &metav1.Status{Message: message, Code: int32(code)}
	}
	return resp, nil
}

// call runs one handler, turning a panic into an error (*contain.Panic,
// whose stack goes into the log line, and whose value stays out of the
// response), and logs the outcome as Kopf does; for webhooks, every error
// is final.
func call(ctx context.Context, h *Handler, obj registry.Object, r *Request) (err error) {
	log := logr.FromContextOrDiscard(ctx)
	name := fmt.Sprintf("Handler '%s'", h.ID)
	if p := contain.Call(func() { err = h.Fn(ctx, obj, r) }); p != nil {
		err = p
		log = log.WithValues("stack", string(p.Stack))
	}
	var perm *execution.PermanentError
	var temp *execution.TemporaryError
	_, isAdmission := asError(err)
	switch {
	case err == nil:
		log.Info(fmt.Sprintf("%s succeeded.", name))
	case isAdmission || errors.As(err, &perm):
		log.Error(nil, fmt.Sprintf("%s failed permanently: %s", name, err))
	case errors.As(err, &temp):
		log.Error(nil, fmt.Sprintf("%s failed temporarily: %s", name, err))
	default:
		log.Error(err, fmt.Sprintf("%s failed with an exception and will stop now: %s", name, err))
	}
	return err
}

// findKind finds the one kind the request is about: by its resource through
// the mapper (which also serves subresources such as scale, whose kind is
// not the object's), or by its kind without a mapper.
func findKind(reg *Registry, mapper meta.RESTMapper, in *admissionv1.AdmissionRequest) (*Kind, error) {
	gvr := schema.GroupVersionResource{Group: in.Resource.Group, Version: in.Resource.Version, Resource: in.Resource.Resource}
	gvk := schema.GroupVersionKind{Group: in.Kind.Group, Version: in.Kind.Version, Kind: in.Kind.Kind}
	if mapper != nil {
		if mapped, err := mapper.KindFor(gvr); err == nil {
			gvk = mapped
		}
	}
	var found []*Kind
	for _, k := range reg.Kinds {
		if k.GVK == gvk {
			found = append(found, k)
		}
	}
	switch len(found) {
	case 0:
		return nil, &UnknownResourceError{Resource: gvr.String()}
	case 1:
		return found[0], nil
	}
	return nil, &AmbiguousResourceError{Resource: gvr.String()}
}

// objectFor is the object the i-th of the selected handlers is given.
// The request's object is decoded once, and the filters and handlers
// share it (as Kopf's handlers share their read-only body), except where a
// change made to it by mistake (changes go into the handler's patch)
// would spread: a mutating handler gets a copy of its own, so that the
// handlers after it do not see its change; and where a mutator is among
// the handlers, each handler of an unstructured kind gets a copy, since
// the request's bodies are the base of the response's JSONPatch. A typed
// object is separate from the bodies, so the last handler may take it
// even if it mutates.
func objectFor(obj registry.Object, selected []*Handler, i int) registry.Object {
	_, bodies := obj.(*unstructured.Unstructured)
	switch {
	case !bodies && (selected[i].Type != Mutating || i == len(selected)-1):
		return obj
	case bodies && !slices.ContainsFunc(selected, func(h *Handler) bool { return h.Type == Mutating }):
		// Validators alone share the bodies; with a mutator among the
		// handlers, the bodies are the base of the JSONPatch, which a
		// validator's stray change would corrupt.
		return obj
	}
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return &unstructured.Unstructured{Object: fields.DeepCopy(u.Object).(map[string]any)}
	}
	return obj.DeepCopyObject().(registry.Object)
}

// decodeObject makes the kind's object from a body: for unstructured
// kinds, the body itself (no copy: handlers treat it as read-only, and
// objectFor gives mutators copies).
func decodeObject(k *Kind, body map[string]any) (registry.Object, error) {
	obj := k.NewObject()
	if u, ok := obj.(*unstructured.Unstructured); ok {
		u.Object = body
		return u, nil
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(body, obj); err != nil {
		return nil, err
	}
	return obj, nil
}
