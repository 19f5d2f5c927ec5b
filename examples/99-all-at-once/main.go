// Command 99-all-at-once uses most of the framework at once: startup and
// cleanup handlers, several create handlers (one posting Events, one
// failing on its first attempt, one creating a pod as a child), update,
// field and delete handlers, and an on-event handler for the children.
package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kopf-go/kopf/handlers"

	"github.com/kopf-go/kopf/pkg/cause"
	"github.com/kopf-go/kopf/pkg/filter"
	"github.com/kopf-go/kopf/pkg/hierarchies"
)

// childLabels mark the pods that create_pod makes, and that
// example_pod_change watches.
var childLabels = map[string]string{"application": "kopf-example-10"}

func main() {
	reg := handlers.NewRegistry()
	handlers.OnStartup(reg, "startup_fn_simple", startupSimple)
	handlers.OnStartup(reg, "startup_fn_retried", startupRetried)
	handlers.OnCleanup(reg, "cleanup_fn", cleanup)
	kex := handlers.ForKind(reg, "kopf.dev", "v1", "KopfExample")
	handlers.OnCreate(kex, "create_1", create1)
	handlers.OnCreate(kex, "create_2", create2)
	handlers.OnUpdate(kex, "update", update)
	handlers.OnField(kex, "update_lst", "spec.lst", updateLst)
	handlers.OnDelete(kex, "delete", deleteFn)
	handlers.OnCreate(kex, "create_pod", createPod)
	pods := handlers.For[*corev1.Pod](reg)
	handlers.OnEvent(pods, "example_pod_change", examplePodChange, handlers.Labels{"application": filter.Equals(childLabels["application"])})
	// An arbitrary error is retried after a second, not after Kopf's
	// default minute (Kopf's e2e test sets the same).
	handlers.Main(reg, handlers.RunOptions{Options: handlers.Options{DefaultBackoff: time.Second}})
}

func startupSimple(ctx context.Context, a *cause.Activity) error {
	logr.FromContextOrDiscard(ctx).Info("Starting in 1s...")
	return pause(ctx, time.Second)
}

// startupRetried fails temporarily three times, a second apart, then
// succeeds.
func startupRetried(ctx context.Context, a *cause.Activity) error {
	if a.Retry < 3 {
		return handlers.Temporary(errors.New(fmt.Sprintf("Going to succeed in %ds", 3-a.Retry)), time.Second)
	}
	logr.FromContextOrDiscard(ctx).Info("Starting retried...")
	return nil
}

// cleanup takes its time: the operator's exit waits for it.
func cleanup(ctx context.Context, a *cause.Activity) error {
	logr.FromContextOrDiscard(ctx).Info("Cleaning up in 3s...")
	return pause(ctx, 3*time.Second)
}

// create1 posts Events about the object and its children (it has none
// here), and leaves a result in status.create_1.
func create1(ctx context.Context, obj *unstructured.Unstructured, c *cause.Change) (any, error) {
	children := createChildren(obj)
	handlers.PostInfo(ctx, obj, "AnyReason", "")
	handlers.PostEvent(ctx, obj, "Warning", "SomeReason", "Cannot do something")
	handlers.PostEvent(ctx, children, "Normal", "SomeReason", "Created as part of the job1step")
	return map[string]any{"job1-status": 100}, nil
}

// create2 waits for something, and fails on its first attempt with an
// arbitrary error, which the framework retries (even across restarts:
// the attempt is recorded on the object).
func create2(ctx context.Context, obj *unstructured.Unstructured, c *cause.Change) (any, error) {
	if err := waitForSomething(ctx); err != nil {
		return nil, err
	}
	if c.Retry == 0 {
		return nil, errors.New("Whoops!")
	}
	return map[string]any{"job2-status": 100}, nil
}

func update(ctx context.Context, obj *unstructured.Unstructured, c *cause.Change) (any, error) {
	fmt.Println("Handling the diff")
	fmt.Println(c.Diff)
	return nil, nil
}

func updateLst(ctx context.Context, obj *unstructured.Unstructured, c *cause.Change) (any, error) {
	fmt.Printf("Handling the FIELD = %v -> %v\n", c.Old, c.New)
	return nil, nil
}

// deleteFn does nothing, but being there, it keeps the finalizer on the
// objects, so that their deletion is handled.
func deleteFn(ctx context.Context, obj *unstructured.Unstructured, c *cause.Change) (any, error) {
	return nil, nil
}

// createChildren would create the object's children; here it has none.
func createChildren(owner *unstructured.Unstructured) handlers.Objects {
	return handlers.Objects{}
}

// waitForSomething stands for a poll of an external API.
func waitForSomething(ctx context.Context) error { return pause(ctx, time.Second) }

// createPod creates a pod that is the object's child: owned by it, in its
// namespace, named and labelled after it, plus the children's label.
func createPod(ctx context.Context, obj *unstructured.Unstructured, c *cause.Change) (any, error) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Name:    "the-only-one",
		Image:   "busybox",
		Command: []string{"sh", "-x", "-c", "sleep 1"},
	}}}}
	if err := hierarchies.Adopt(pod, obj); err != nil {
		return nil, handlers.Permanent(err)
	}
	if err := hierarchies.Label(pod, childLabels); err != nil {
		return nil, handlers.Permanent(err)
	}
	if err := handlers.Client(ctx).Create(ctx, pod); err != nil {
		return nil, fmt.Errorf("create the pod: %w", err)
	}
	return nil, nil
}

func examplePodChange(ctx context.Context, pod *corev1.Pod, e *cause.Event) (any, error) {
	logr.FromContextOrDiscard(ctx).Info("This pod is special for us.")
	return nil, nil
}

// pause waits for d, or fails as soon as ctx is done.
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
