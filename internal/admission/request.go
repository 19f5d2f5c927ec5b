package admission

import (
	"crypto/x509"
	"fmt"
	"net/http"

	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/kopf-go/kopf/pkg/diff"
	"github.com/kopf-go/kopf/pkg/patch"
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

// MissingDataError is a review that lacks what every review has (the user,
// an object): a bad webhook call rather than a bad API request.
type MissingDataError struct{ Message string }

func (e *MissingDataError) Error() string { return e.Message }

// newRequest decodes the parts of a review that all handlers share.
func newRequest(input Input) (*Request, error) {
	in, headers := input.Request, input.Headers
	if in == nil {
		return nil, &MissingDataError{Message: "the admission review has no request"}
	}
	if in.UserInfo.Username == "" && in.UserInfo.UID == "" && len(in.UserInfo.Groups) == 0 {
		return nil, &MissingDataError{Message: "user info is missing from the admission request"}
	}
	newBody, oldBody := input.New, input.Old
	if newBody == nil && oldBody == nil {
		var err error
		if newBody, err = decodeBody(in.Object.Raw); err != nil {
			return nil, fmt.Errorf("decode the object: %w", err)
		}
		if oldBody, err = decodeBody(in.OldObject.Raw); err != nil {
			return nil, fmt.Errorf("decode the old object: %w", err)
		}
	}
	body := newBody
	if body == nil {
		body = oldBody
	}
	if body == nil {
		return nil, &MissingDataError{Message: "either the old or the new object is missing from the admission request"}
	}
	if headers == nil {
		headers = http.Header{}
	}
	return &Request{
		UID:              in.UID,
		Operation:        in.Operation,
		DryRun:           in.DryRun != nil && *in.DryRun,
		UserInfo:         in.UserInfo,
		Subresource:      in.SubResource,
		Resource:         schema.GroupVersionResource{Group: in.Resource.Group, Version: in.Resource.Version, Resource: in.Resource.Resource},
		Name:             in.Name,
		Namespace:        in.Namespace,
		Body:             body,
		Old:              oldBody,
		New:              newBody,
		Diff:             diff.Compute(orNil(oldBody), orNil(newBody)),
		Headers:          headers,
		PeerCertificates: input.PeerCertificates,
	}, nil
}

// decodeBody decodes an object as unstructured objects hold it (integers
// as int64); empty or null means absent.
func decodeBody(raw []byte) (map[string]any, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var out map[string]any
	if err := utiljson.Unmarshal(raw, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// orNil turns an absent body into an untyped nil, which diff.Compute reads
// as "absent" (a nil map in an interface would not be nil).
func orNil(m map[string]any) any {
	if m == nil {
		return nil
	}
	return m
}

// forHandler returns the handler's own copy of the request.
func (r *Request) forHandler(h *Handler) *Request {
	c := *r
	c.HandlerID, c.Param = h.ID, h.Param
	c.Type = h.Type
	c.Warnings = nil
	c.Patch = patch.New()
	return &c
}
