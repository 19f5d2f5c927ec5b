package handlertest

import (
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/internal/mergepatch"
	"github.com/kopf-go/kopf/pkg/admission"
	"github.com/kopf-go/kopf/pkg/diff"
	"github.com/kopf-go/kopf/pkg/patch"
)

// Admission is the request a webhook handler gets for the operation on
// an object going from old to obj: old is nil on creation, obj nil on
// deletion. Body is the new object, or the old one on deletion, as the API
// server sends them. A mutating handler's changes land in Request.Patch
// (see AdmissionPatch); its warnings in Request.Warnings.
func Admission(op admission.Operation, old, obj client.Object) *admission.Request {
	r := &admission.Request{Operation: op, Patch: patch.New()}
	var oldBody, newBody any
	if old != nil {
		r.Old = mustBody(old)
		r.Body, oldBody = r.Old, r.Old
		r.Name, r.Namespace = old.GetName(), old.GetNamespace()
	}
	if obj != nil {
		r.New = mustBody(obj)
		r.Body, newBody = r.New, r.New
		r.Name, r.Namespace = obj.GetName(), obj.GetNamespace()
	}
	r.Diff = diff.Compute(oldBody, newBody)
	return r
}

// AdmissionPatch is what a mutating handler put in the request's patch,
// as a merge patch of the object; nil if nothing.
func AdmissionPatch(r *admission.Request) map[string]any { return mergepatch.Whole(r.Patch) }
