package admission

import (
	"fmt"
	"net/http"

	"github.com/kopf-go/kopf/pkg/admission"

	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/kopf-go/kopf/pkg/diff"
	"github.com/kopf-go/kopf/pkg/patch"
)

// Request is what a webhook handler learns beside its object (the public
// admission.Request).
type Request = admission.Request

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
func forHandler(r *Request, h *Handler) *Request {
	c := *r
	c.HandlerID, c.Param = h.ID, h.Param
	c.Type = h.Type
	c.Warnings = nil
	c.Patch = patch.New()
	return &c
}
