package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestExtraExamples runs the examples with operator-wide handlers, indices
// and an embedded operator, at once; each serves a namespace of its own.
func TestExtraExamples(t *testing.T) {
	for _, c := range []struct {
		name string
		run  func(*testing.T)
	}{
		{"12-embedded", extraRunEmbedded},
		{"13-hooks", extraRunHooks},
		{"16-indexing", extraRunIndexing},
		{"99-all-at-once", extraRunAllAtOnce},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(t)
		})
	}
}

// extraRunEmbedded: the program runs the operator in a goroutine of its
// own while it creates and deletes three objects, then stops the operator
// and exits by itself (Kopf's example does the same with a thread).
func extraRunEmbedded(t *testing.T) {
	ns := env.Namespace(t)
	op := startExample(t, "12-embedded", ns)
	extraWaitForExit(t, op)
	if err := op.Err(); err != nil {
		t.Errorf("want exit code 0: %v", err)
	}

	lines := map[string]int{"Starting the main app.": 1, "Exiting the main app.": 1}
	order := []string{"Starting the main app."}
	for step := range 3 {
		name := fmt.Sprintf("kopf-example-%d", step)
		activity := fmt.Sprintf("Do the main app activity here. Step %d/3.", step+1)
		lines[activity] = 1
		// The operator's memo carries the templates.
		lines["Hello, "+name+"!"] = 1
		lines["Good bye, "+name+"!"] = 1
		order = append(order, activity, "Hello, "+name+"!", "Good bye, "+name+"!")
	}
	order = append(order, "Exiting the main app.")
	extraCheckLines(t, op, lines)
	checkOrder(t, op.Output(), order)
	extraCheckOutcomes(t, op, map[string]int{"create_fn": 3, "delete_fn": 3}, nil)
	extraCheckCleanLog(t, op, 0)

	// The objects are created and deleted, the finalizers released.
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion("kopf.dev/v1")
	list.SetKind("KopfExampleList")
	if err := env.Client.List(context.Background(), list, client.InNamespace(ns)); err != nil {
		t.Fatalf("list the objects: %v", err)
	}
	if len(list.Items) > 0 {
		t.Errorf("%d objects are left, want none", len(list.Items))
	}
}

// extraRunHooks: startup, cleanup, login and probe handlers, and a
// background task per pod that the cleanup handler stops.
func extraRunHooks(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t)
	liveness := fmt.Sprintf("http://127.0.0.1:%d/healthz", extraFreePort(t))
	op := extraStart(t, "13-hooks", ns, "--liveness="+liveness)
	op.waitForLine(t, "Activity 'startup_fn_retried' succeeded.")

	pod := extraPod(ns, "kopf-e2e-13-", nil)
	if err := env.Client.Create(ctx, pod); err != nil {
		t.Fatalf("create a pod: %v", err)
	}
	// Kopf's startup stop-word: the task serves 1 to 10 s after it starts.
	op.waitForLine(t, "Served by the background task.")
	probes := extraProbes(t, op, liveness, func(got map[string]any) bool { return got["tasks_count"] != float64(0) })
	want := map[string]any{"tasks_count": float64(1), "monitored_objects": map[string]any{ns: []any{pod.Name}}}
	if diff := cmp.Diff(want, probes); diff != "" {
		t.Errorf("the probes' results (-want +got):\n%s", diff)
	}
	op.stop(t)

	extraCheckOutcomes(t, op, map[string]int{"startup_fn_simple": 1, "startup_fn_retried": 1, "cleanup_fn": 1, "login_fn": 1}, map[string]int{})
	extraCheckLines(t, op, map[string]int{
		"Logging in in 2s...":           1,
		"Initialising the task-lock...": 1,
		"Activity 'startup_fn_retried' failed temporarily: Going to succeed in 3s": 1,
		"Activity 'startup_fn_retried' failed temporarily: Going to succeed in 2s": 1,
		"Activity 'startup_fn_retried' failed temporarily: Going to succeed in 1s": 1,
		"Starting retried...":                    1,
		"Cleaning up...":                         1,
		"All pod-tasks are requested to stop...": 1,
		// One task, for the one pod.
		"Serving is finished by request.": 1,
	})
	if op.count("Handler 'pod_task' succeeded.") == 0 {
		t.Error("the on-event handler pod_task never succeeded")
	}
	checkOrder(t, op.Output(), []string{
		"Logging in in 2s...", "Activity 'login_fn' succeeded.", "Initialising the task-lock...",
		"Starting retried...", "Served by the background task.",
		"Cleaning up...", "All pod-tasks are requested to stop...", "Serving is finished by request.",
		"Activity 'cleanup_fn' succeeded.", "Operator has stopped.",
	})
	// The three temporary failures of startup_fn_retried.
	extraCheckCleanLog(t, op, 3)
}

// extraRunIndexing: two indices of pods, probes reading them, and a
// timer writing the running pods of "default" (and "kube-system") into
// the objects' status. The operator serves the test's namespace and
// "default".
func extraRunIndexing(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t)
	// Pods in "default" are reported when running; pods elsewhere never.
	running := extraPod("default", "kopf-e2e-16-running-", map[string]string{"kopf-e2e-16": "running-" + ns})
	pending := extraPod("default", "kopf-e2e-16-pending-", map[string]string{"kopf-e2e-16": "pending-" + ns})
	elsewhere := extraPod(ns, "kopf-e2e-16-elsewhere-", map[string]string{"kopf-e2e-16": "elsewhere-" + ns})
	for _, pod := range []*corev1.Pod{running, pending, elsewhere} {
		if err := env.Client.Create(ctx, pod); err != nil {
			t.Fatalf("create a pod: %v", err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), pod) })
	}
	// There is no kubelet: the test says which pods run.
	for _, pod := range []*corev1.Pod{running, elsewhere} {
		pod.Status.Phase = corev1.PodRunning
		if err := env.Client.Status().Update(ctx, pod); err != nil {
			t.Fatalf("set the pod's phase: %v", err)
		}
	}

	liveness := fmt.Sprintf("http://127.0.0.1:%d/healthz", extraFreePort(t))
	op := extraStart(t, "16-indexing", ns, "--namespace=default", "--liveness="+liveness)
	op.waitForLine(t, "Starting workers")
	obj := exampleObject(t, ns)
	if err := env.Client.Create(ctx, obj); err != nil {
		t.Fatalf("create the object: %v", err)
	}
	key := client.ObjectKeyFromObject(obj)
	want := []any{"default::" + running.Name}
	var got any
	op.waitFor(t, "status.running-pods lists the running pod of default", func() bool {
		current := newObject()
		if err := env.Client.Get(ctx, key, current); err != nil {
			return false
		}
		got, _, _ = unstructured.NestedFieldNoCopy(current.Object, "status", "running-pods")
		return cmp.Equal(want, got)
	})
	// The timer prints the labels index: (label, value) -> pod names.
	for _, pod := range []*corev1.Pod{running, pending, elsewhere} {
		op.waitForLine(t, fmt.Sprintf("[kopf-e2e-16 %s]:[%s]", pod.Labels["kopf-e2e-16"], pod.Name))
	}

	// The probes read the index of every pod of the served namespaces.
	names := []string{running.Name, pending.Name, elsewhere.Name}
	probes := extraProbes(t, op, liveness, func(got map[string]any) bool {
		listed, _ := got["pod_names"].([]any)
		for _, name := range names {
			if !slices.Contains(listed, any(name)) {
				return false
			}
		}
		return true
	})
	if listed, _ := probes["pod_names"].([]any); probes["pod_count"] != float64(len(listed)) {
		t.Errorf("the probes disagree: pod_count %v, pod_names %v", probes["pod_count"], listed)
	}

	if err := env.Client.Delete(ctx, obj); err != nil {
		t.Fatalf("delete the object: %v", err)
	}
	extraWaitForGone(t, op, key)
	op.waitForLine(t, "Timer 'intervalled' has exited on request")
	op.stop(t)

	extraCheckOutcomes(t, op, nil, map[string]int{})
	if op.count("Timer 'intervalled' succeeded.") == 0 {
		t.Error("the timer never succeeded")
	}
	extraCheckCleanLog(t, op, 0)
}

// extraRunAllAtOnce: Kopf's e2e run of its all-features example, plus an
// update of spec.lst for the update and field handlers.
func extraRunAllAtOnce(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t)
	op := startExample(t, "99-all-at-once", ns)
	op.waitForLine(t, "Starting workers")

	obj := exampleObject(t, ns)
	if err := env.Client.Create(ctx, obj); err != nil {
		t.Fatalf("create the object: %v", err)
	}
	key := client.ObjectKeyFromObject(obj)
	op.waitForLine(t, "Creation is processed:")
	op.waitFor(t, "the results are in the status", func() bool {
		current := newObject()
		if err := env.Client.Get(ctx, key, current); err != nil {
			return false
		}
		status, _, _ := unstructured.NestedMap(current.Object, "status")
		return cmp.Equal(map[string]any{
			"create_1": map[string]any{"job1-status": int64(100)},
			"create_2": map[string]any{"job2-status": int64(100)},
		}, status)
	})
	extraCheckChildPod(t, op, obj)
	extraCheckEvents(t, op, obj, []string{"Normal/AnyReason/", "Warning/SomeReason/Cannot do something"})

	patch := []byte(`{"spec": {"lst": [1, 2]}}`)
	if err := env.Client.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatalf("patch spec.lst: %v", err)
	}
	op.waitForLine(t, "Updating is processed:")

	if err := env.Client.Delete(ctx, obj); err != nil {
		t.Fatalf("delete the object: %v", err)
	}
	extraWaitForGone(t, op, key)
	op.waitForLine(t, "Deleted, really deleted")
	op.stop(t)

	extraCheckOutcomes(t, op, map[string]int{
		"create_1": 1, "create_2": 1, "create_pod": 1, "delete": 1,
		"startup_fn_simple": 1, "startup_fn_retried": 1, "cleanup_fn": 1,
		"update": 1, "update_lst/spec.lst": 1,
	}, map[string]int{})
	extraCheckLines(t, op, map[string]int{
		"Starting in 1s...":    1,
		"Starting retried...":  1,
		"Cleaning up in 3s...": 1,
		"Activity 'startup_fn_retried' failed temporarily: Going to succeed in": 3,
		// The arbitrary error is retried after Options.DefaultBackoff.
		"Handler 'create_2' failed with an exception and will try again in 1 seconds: Whoops!": 1,
		"Handling the diff": 1,
		// Printed on a line of its own; the engine logs it too.
		"\n(('add', ('spec', 'lst'), None, [1, 2]),)\n": 1,
		"Handling the FIELD = <nil> -> [1 2]":           1,
		"Adding the finalizer":                          1,
		"Creation is processed: 3 succeeded; 0 failed.": 1,
	})
	for _, line := range []string{"Creation is in progress:", "Deletion is in progress:", "This pod is special for us."} {
		if op.count(line) == 0 {
			t.Errorf("the output lacks %q", line)
		}
	}
	checkOrder(t, op.Output(), []string{"Starting in 1s...", "Starting workers", "Creation is processed:",
		"Handling the diff", "Deleted, really deleted", "Cleaning up in 3s...", "Activity 'cleanup_fn' succeeded.",
		"Operator has stopped."})
	// Three temporary failures of startup_fn_retried, one of create_2
	// (Kopf's E2E_ALLOW_TRACEBACKS: this one has a stack trace).
	extraCheckCleanLog(t, op, 4)
}

// extraCheckChildPod asserts that create_pod made one pod, adopted and labelled.
func extraCheckChildPod(t *testing.T, op *operator, owner *unstructured.Unstructured) {
	t.Helper()
	pods := &corev1.PodList{}
	op.waitFor(t, "the child pod exists", func() bool {
		err := env.Client.List(context.Background(), pods, client.InNamespace(owner.GetNamespace()),
			client.MatchingLabels{"application": "kopf-example-10"})
		return err == nil && len(pods.Items) > 0
	})
	if len(pods.Items) != 1 {
		t.Fatalf("%d child pods, want 1", len(pods.Items))
	}
	pod := pods.Items[0]
	if want := owner.GetName() + "-"; pod.GenerateName != want {
		t.Errorf("the pod's generateName is %q, want %q", pod.GenerateName, want)
	}
	if pod.Labels["somelabel"] != "somevalue" {
		t.Errorf("the pod lacks its owner's labels: %v", pod.Labels)
	}
	refs := pod.OwnerReferences
	if len(refs) != 1 || refs[0].UID != owner.GetUID() || refs[0].Kind != "KopfExample" ||
		refs[0].Controller == nil || !*refs[0].Controller {
		t.Errorf("the pod's owner references are %+v, want the object as the controller", refs)
	}
}

// extraCheckEvents waits for the Events about obj, as "type/reason/message".
func extraCheckEvents(t *testing.T, op *operator, obj *unstructured.Unstructured, want []string) {
	t.Helper()
	var got []string
	op.waitFor(t, "the Events are posted", func() bool {
		events := &corev1.EventList{}
		if err := env.Client.List(context.Background(), events, client.InNamespace(obj.GetNamespace())); err != nil {
			return false
		}
		got = nil
		for _, e := range events.Items {
			if e.InvolvedObject.UID == obj.GetUID() {
				got = append(got, e.Type+"/"+e.Reason+"/"+e.Message)
			}
		}
		slices.Sort(got)
		return cmp.Equal(want, got)
	})
}
