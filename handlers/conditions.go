package handlers

import (
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/internal/conditions"
)

// The condition types that Conditions keeps, and their reasons
// (docs/handlers.md#conditions). Conditions of other types in
// status.conditions are the operator's own, and stay as they are.
const (
	ConditionReady       = conditions.Ready
	ConditionReconciling = conditions.Reconciling
	ConditionStalled     = conditions.Stalled

	// ReasonSucceeded: every handler of the last cause succeeded.
	ReasonSucceeded = conditions.ReasonSucceeded
	// ReasonInProgress: handlers of the cause are pending.
	ReasonInProgress = conditions.ReasonInProgress
	// ReasonRetrying: a handler failed temporarily and runs again; the
	// message names it and says its error.
	ReasonRetrying = conditions.ReasonRetrying
	// ReasonFailed: a handler failed permanently; the message names it
	// and says its error.
	ReasonFailed = conditions.ReasonFailed
)

// Conditions makes the engine keep status.conditions of the resource's
// objects from their change handlers' progress, so that `kubectl wait
// --for=condition=Ready`, kstatus (Flux, kpt) and Argo CD tell when an
// object is handled: Ready (True once every handler of the last cause
// succeeded), and the abnormal-true pair Reconciling (True while handlers
// are pending or retrying) and Stalled (True after a permanent failure),
// each a metav1.Condition with the object's generation, and
// status.observedGeneration once a cause is handled. They ride on the
// writes the cycle makes anyway; Kopf's own state on the object (progress
// annotations, the diff-base, status.<id> results) stays as it is.
//
//	kex := handlers.ForKind(reg, "kopf.dev", "v1", "KopfExample")
//	handlers.Conditions(kex)
//
// The kind's status must keep unknown fields or declare conditions and
// observedGeneration (a CRD's schema prunes what it does not declare).
func Conditions[T client.Object](res *Resource[T]) *Resource[T] {
	res.res.kind.Conditions = true
	return res
}
