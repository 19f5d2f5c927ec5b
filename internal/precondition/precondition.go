// Package precondition reads the API server's answer to a write that
// names the object it was meant for. The engine's writes carry the
// object's uid (and, where the uid would be ignored, its
// resourceVersion), so that a write meant for an object that is gone
// fails instead of landing on another object created under its name
// (docs/ARCHITECTURE.md, "Writes").
package precondition

import (
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// UIDRefused reports whether the API server refused a patch because the
// uid it names is not the stored object's: 422 Invalid with a cause on
// the field metadata.uid, which is immutable. Nothing else makes the API
// server name that field in a patch that only repeats the object's own
// uid, so any other refusal is a failed write, to be retried.
func UIDRefused(err error) bool {
	var status apierrors.APIStatus
	if !apierrors.IsInvalid(err) || !errors.As(err, &status) || status.Status().Details == nil {
		return false
	}
	for _, cause := range status.Status().Details.Causes {
		if cause.Field == "metadata.uid" {
			return true
		}
	}
	return false
}
