package main

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// activity is the app's own work while the operator runs: it creates an
// object, lets the operator handle it for a second, deletes it, and waits
// another second, three times.
func activity(ctx context.Context, c client.Client, namespace string) error {
	for step := range steps {
		fmt.Printf("Do the main app activity here. Step %d/%d.\n", step+1, steps)
		if err := createObject(ctx, c, namespace, step); err != nil {
			return err
		}
		if !sleep(ctx, time.Second) {
			return nil
		}
		if err := deleteObject(ctx, c, namespace, step); err != nil {
			return err
		}
		if !sleep(ctx, time.Second) {
			return nil
		}
	}
	return nil
}

// exampleObject is the step's KopfExample, kopf-example-<step>.
func exampleObject(namespace string, step int) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion("kopf.dev/v1")
	obj.SetKind("KopfExample")
	obj.SetNamespace(namespace)
	obj.SetName(fmt.Sprintf("kopf-example-%d", step))
	return obj
}

// createObject creates the step's object; one left from an earlier run is
// fine.
func createObject(ctx context.Context, c client.Client, namespace string, step int) error {
	obj := exampleObject(namespace, step)
	if err := c.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create %s: %w", obj.GetName(), err)
	}
	return nil
}

// deleteObject deletes the step's object; one that is gone already is
// fine.
func deleteObject(ctx context.Context, c client.Client, namespace string, step int) error {
	obj := exampleObject(namespace, step)
	if err := c.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete %s: %w", obj.GetName(), err)
	}
	return nil
}

// sleep waits for d, or reports false as soon as ctx is done.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
