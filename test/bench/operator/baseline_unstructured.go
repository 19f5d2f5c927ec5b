package main

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/kopf-go/kopf/test/bench/internal/kex"
)

// setupBaselineUnstructured adds the hand-written reconciler of
// baseline.go for the kind as unstructured objects, the counterpart of
// kopf-go's quick start. Its manager's client reads unstructured objects
// from the cache (see main.go), as an expert would configure it.
func setupBaselineUnstructured(mgr manager.Manager, c config, rec *recorder) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(newUnstructured()).
		WithOptions(controller.Options{MaxConcurrentReconciles: c.workers}).
		Complete(&baselineUnstructured{Client: mgr.GetClient(), rec: rec})
}

func newUnstructured() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(kex.GroupVersion.WithKind("KopfExample"))
	return u
}

type baselineUnstructured struct {
	client.Client
	rec *recorder
}

func (r *baselineUnstructured) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	obj := newUnstructured()
	if err := r.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if obj.GetDeletionTimestamp() != nil {
		if !controllerutil.ContainsFinalizer(obj, kex.Finalizer) {
			return ctrl.Result{}, nil
		}
		r.rec.deleted()
		patch := client.MergeFromWithOptions(obj.DeepCopy(), client.MergeFromWithOptimisticLock{})
		controllerutil.RemoveFinalizer(obj, kex.Finalizer)
		return ctrl.Result{}, r.Patch(ctx, obj, patch)
	}
	if !controllerutil.ContainsFinalizer(obj, kex.Finalizer) {
		patch := client.MergeFromWithOptions(obj.DeepCopy(), client.MergeFromWithOptimisticLock{})
		controllerutil.AddFinalizer(obj, kex.Finalizer)
		return ctrl.Result{}, r.Patch(ctx, obj, patch)
	}
	// The same annotation as the typed baseline's: {"spec": ...}.
	raw, err := json.Marshal(map[string]any{"spec": obj.Object["spec"]})
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("encode the spec: %w", err)
	}
	spec := string(raw)
	last, handled := obj.GetAnnotations()[kex.LastHandled]
	if last == spec {
		return ctrl.Result{}, nil
	}
	if !handled {
		r.rec.changed("create", obj.GetName(), counterOf(obj))
		patch := client.MergeFrom(obj.DeepCopy())
		if err := unstructured.SetNestedField(obj.Object, "created", "status", "create_fn", "message"); err != nil {
			return ctrl.Result{}, err
		}
		if err := r.Status().Patch(ctx, obj, patch); err != nil {
			return ctrl.Result{}, fmt.Errorf("write the status: %w", err)
		}
	} else {
		r.rec.changed("update", obj.GetName(), counterOf(obj))
	}
	patch := client.MergeFrom(obj.DeepCopy())
	annotations := obj.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[kex.LastHandled] = spec
	obj.SetAnnotations(annotations)
	if err := r.Patch(ctx, obj, patch); err != nil {
		return ctrl.Result{}, fmt.Errorf("record the handled spec: %w", err)
	}
	return ctrl.Result{}, nil
}
