// Package admission holds what a validating or mutating handler learns
// beside its object (Request, Kopf's webhook kwargs) and the error by
// which it denies an API request with a code of its choice (Error). The
// handlers are registered with handlers.OnValidate and handlers.OnMutate;
// pkg/handlertest builds requests for unit tests.
package admission

import (
	"crypto/x509"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kopf-go/kopf/pkg/diff"
	"github.com/kopf-go/kopf/pkg/patch"
)

// Type says whether a handler validates or mutates.
type Type string

// The handler types, with Kopf's names.
const (
	Validating Type = "validating"
	Mutating   Type = "mutating"
)

// Operation is an API operation under admission: CREATE, UPDATE, DELETE or
// CONNECT (the admission API's own type).
type Operation = admissionv1.Operation

// The operations a webhook can be called for.
const (
	Create  = admissionv1.Create
	Update  = admissionv1.Update
	Delete  = admissionv1.Delete
	Connect = admissionv1.Connect
)

// Request is what a webhook handler learns beside its object: Kopf's
// webhook kwargs. Each handler gets a request of its own (its own Patch and
// Warnings); the bodies are shared, so treat them as read-only.
type Request struct {
	// HandlerID is the id of the handler being called.
	HandlerID string
	// Param is the value the handler was registered with.
	Param any
	// Type is the type of the handler being called.
	Type Type
	// UID identifies the admission request.
	UID types.UID
	// Operation is CREATE, UPDATE, DELETE or CONNECT.
	Operation Operation
	// DryRun: the API request will not be persisted; handlers with side
	// effects must skip them.
	DryRun bool
	// UserInfo is who makes the API request.
	UserInfo authenticationv1.UserInfo
	// Subresource is the subresource requested ("status", "scale"), or ""
	// for the main resource.
	Subresource string
	// Resource is the resource requested (in the version of the webhook's
	// rule, which may differ from the caller's under matchPolicy
	// Equivalent).
	Resource schema.GroupVersionResource
	// Name and Namespace of the object; the name may be empty on creation
	// with generateName.
	Name, Namespace string
	// Body is the object as a JSON-like map: the new one, or the old one on
	// deletion.
	Body map[string]any
	// Old and New are the objects before and after the operation; nil when
	// absent (Old on creation, New on deletion).
	Old, New map[string]any
	// Diff lists the changes from Old to New.
	Diff diff.Diff
	// Headers of the HTTP request (from the API server, not the user).
	Headers http.Header
	// PeerCertificates are the API server's client certificates, if it sent
	// any (Kopf's sslpeer).
	PeerCertificates []*x509.Certificate
	// Warnings are returned to the API client. Add to them with Warn.
	Warnings []string
	// Patch collects changes to the object; a mutating handler's patch is
	// rendered into the response as a JSONPatch against Body. A validating
	// handler's patch is ignored.
	Patch *patch.Patch
}

// Warn adds a warning for the API client (kubectl prints it).
func (r *Request) Warn(message string) { r.Warnings = append(r.Warnings, message) }

// DefaultCode is the status code of a denial that names none.
const DefaultCode = http.StatusInternalServerError

// Error denies an API request with a message and a status code (zero:
// DefaultCode, 500) for the API client. Any error denies the request; this
// one is preferred when several handlers fail, and it alone carries a code:
//
//	return admission.Error{Message: "spec.field is not allowed", Code: 422}
type Error struct {
	Message string
	Code    int
}

// Error returns the message. The receiver is a value, so that both Error
// and *Error are errors.
func (e Error) Error() string { return e.Message }
