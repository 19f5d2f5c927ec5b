package main

import (
	"context"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/kopf-go/kopf/test/bench/internal/kex"
)

// setupBaseline adds the reconciler that an expert would write by hand
// for what the kopf variant does: the finalizer while a delete handler
// must run, the create handler's result in status through the status
// subresource, the last handled spec in an annotation (so that a change
// is handled once and an update tells from a create), and the finalizer's
// removal on deletion.
func setupBaseline(mgr manager.Manager, c config, rec *recorder) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&kex.KopfExample{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: c.workers}).
		Complete(&baseline{Client: mgr.GetClient(), rec: rec})
}

type baseline struct {
	client.Client
	rec *recorder
}

func (r *baseline) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	obj := &kex.KopfExample{}
	if err := r.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !obj.DeletionTimestamp.IsZero() {
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
	spec := kex.LastHandledOf(obj.Spec)
	last, handled := obj.Annotations[kex.LastHandled]
	if last == spec {
		return ctrl.Result{}, nil
	}
	if !handled {
		r.rec.changed("create", obj.Name, obj.Spec.Counter)
		patch := client.MergeFrom(obj.DeepCopy())
		obj.Status.CreateFn = &kex.Result{Message: "created"}
		if err := r.Status().Patch(ctx, obj, patch); err != nil {
			return ctrl.Result{}, fmt.Errorf("write the status: %w", err)
		}
	} else {
		r.rec.changed("update", obj.Name, obj.Spec.Counter)
	}
	patch := client.MergeFrom(obj.DeepCopy())
	if obj.Annotations == nil {
		obj.Annotations = map[string]string{}
	}
	obj.Annotations[kex.LastHandled] = spec
	if err := r.Patch(ctx, obj, patch); err != nil {
		return ctrl.Result{}, fmt.Errorf("record the handled spec: %w", err)
	}
	return ctrl.Result{}, nil
}
