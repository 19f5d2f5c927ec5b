package e2e

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// runBuiltinsExample runs 10-builtins as Kopf's test_example_10 does: create a
// Pod, let the operator see it, delete it, and check that its killer was
// started and then cancelled. envtest has no scheduler or kubelet: the Pod
// stays pending, which is all the operator needs.
func runBuiltinsExample(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t)
	op := startExample(t, "10-builtins", ns)
	op.waitForLine(t, "Starting workers")

	pod := builtinsPod(ns)
	if err := env.Client.Create(ctx, pod); err != nil {
		t.Fatalf("create the pod: %v", err)
	}
	key := client.ObjectKeyFromObject(pod)
	op.waitForLine(t, "=== Pod killing happens in 30s.")
	op.waitForLine(t, "Creation is processed:")
	op.waitFor(t, "the pod has the finalizer", func() bool {
		var p corev1.Pod
		return env.Client.Get(ctx, key, &p) == nil && slices.Equal(p.Finalizers, []string{finalizer})
	})

	if err := env.Client.Delete(ctx, pod); err != nil {
		t.Fatalf("delete the pod: %v", err)
	}
	op.waitFor(t, "the pod is gone", func() bool {
		err := env.Client.Get(ctx, key, &corev1.Pod{})
		return err != nil && client.IgnoreNotFound(err) == nil
	})
	op.waitForLine(t, "=== Pod killing is cancelled!")
	op.waitForLine(t, "Deleted, really deleted")
	op.stop(t)

	checkOutput(t, op, exampleCase{
		// pod_in_sight is a resume handler too, but the pod is new.
		succeeded: map[string]int{"pod_in_sight": 1, "pod_deleted": 1},
		failed:    map[string]int{},
		lines: map[string]int{
			"=== Pod killing happens in 30s.":               1,
			"=== Pod killing is cancelled!":                 1,
			"=== Pod killing happens NOW!":                  0,
			"Creation is processed: 1 succeeded; 0 failed.": 1,
			"Deletion is processed: 1 succeeded; 0 failed.": 1,
			"Adding the finalizer":                          1,
			"Activity 'stop_killers' succeeded.":            1,
		},
		present: []string{"Creation is in progress:", "Deletion is in progress:",
			"Removing the finalizer, thus allowing the actual deletion."},
		order: [][]string{{
			"Adding the finalizer",
			"Creation is in progress:",
			// The killer logs in its own goroutine, maybe after the
			// handler's success, as Kopf's asyncio task does.
			"=== Pod killing happens in 30s.",
			"Deletion is in progress:",
			"=== Pod killing is cancelled!",
			"Handler 'pod_deleted' succeeded.",
			"Removing the finalizer, thus allowing the actual deletion.",
			"Activity 'stop_killers' succeeded.",
		}},
	})
	// As in Kopf's test, the killer's lines are about the pod.
	checkLineAbout(t, op, "=== Pod killing happens in 30s.", pod.Name)
	checkLineAbout(t, op, "=== Pod killing is cancelled!", pod.Name)
}

// builtinsPod is the pod of Kopf's test_example_10.
func builtinsPod(namespace string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "kopf-pod-", Namespace: namespace},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name:    "the-only-one",
			Image:   "busybox",
			Command: []string{"sh", "-x", "-c", "sleep 1"},
		}}},
	}
}

// runBuiltinsResumed runs 10-builtins for a pod that exists before the
// operator starts, and stops the operator while the pod still exists: the
// resume handler starts the pod's killer once, and the cleanup handler
// cancels it, so the operator leaves no goroutine behind.
func runBuiltinsResumed(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t)
	pod := builtinsPod(ns)
	if err := env.Client.Create(ctx, pod); err != nil {
		t.Fatalf("create the pod: %v", err)
	}
	// Nothing removes the operator's finalizer once it has stopped.
	t.Cleanup(func() {
		patch := []byte(`{"metadata": {"finalizers": null}}`)
		_ = env.Client.Patch(ctx, pod, client.RawPatch(types.MergePatchType, patch))
		_ = env.Client.Delete(ctx, pod)
	})

	op := startExample(t, "10-builtins", ns)
	op.waitForLine(t, "=== Pod killing happens in 30s.")
	op.waitForLine(t, "Creation is processed:")
	op.stop(t)

	checkOutput(t, op, exampleCase{
		// The pod is new and exists at the start: pod_in_sight is selected
		// as the create and as the resume handler, and runs once.
		succeeded: map[string]int{"pod_in_sight": 1},
		failed:    map[string]int{},
		lines: map[string]int{
			"=== Pod killing happens in 30s.":               1,
			"=== Pod killing is cancelled!":                 1,
			"=== Pod killing happens NOW!":                  0,
			"Creation is processed: 1 succeeded; 0 failed.": 1,
			"Deletion is in progress":                       0,
			"Activity 'stop_killers' succeeded.":            1,
		},
		order: [][]string{{
			"Adding the finalizer",
			"=== Pod killing happens in 30s.",
			"Activity 'stop_killers' is invoked.",
			"=== Pod killing is cancelled!",
			"Activity 'stop_killers' succeeded.",
			"Operator has stopped.",
		}},
	})
	checkLineAbout(t, op, "=== Pod killing is cancelled!", pod.Name)
}
