// Command 02-children creates a Pod for every new KopfExample and makes it
// the object's child, so that deleting the object deletes the Pod too. The
// Pod's uid lands in the object's status.create_fn.children.
package main

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kopf-go/kopf/handlers"

	"github.com/kopf-go/kopf/pkg/cause"
	"github.com/kopf-go/kopf/pkg/hierarchies"
)

func main() {
	reg := handlers.NewRegistry()
	kex := handlers.ForKind(reg, "kopf.dev", "v1", "KopfExample")
	handlers.OnCreate(kex, "create_fn", createFn)
	handlers.Main(reg, handlers.RunOptions{})
}

// createFn renders a Pod from the object's spec, adopts it, creates it,
// and returns its uid, which lands in status.create_fn.
func createFn(ctx context.Context, obj *unstructured.Unstructured, c *cause.Change) (any, error) {
	spec := c.Spec()
	duration, ok := spec["duration"]
	if !ok {
		duration = 0
	}
	field, ok := spec["field"].(string)
	if !ok {
		field = "default-value"
	}
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Name:    "the-only-one",
		Image:   "busybox",
		Command: []string{"sh", "-x", "-c"},
		Args:    []string{fmt.Sprintf("echo \"FIELD=$FIELD\"\nsleep %v\n", duration)},
		Env:     []corev1.EnvVar{{Name: "FIELD", Value: field}},
	}}}}

	// The owner reference, generateName "<name>-", the namespace and the
	// labels, all from the object being handled.
	if err := hierarchies.Adopt(pod, obj); err != nil {
		return nil, handlers.Permanent(err)
	}
	if err := handlers.Client(ctx).Create(ctx, pod); err != nil {
		return nil, fmt.Errorf("create the pod: %w", err)
	}
	return map[string]any{"children": []any{string(pod.UID)}}, nil
}
