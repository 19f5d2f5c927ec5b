package e2e

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/pkg/hierarchies"
)

// moreCase is an example that runs through the generic flow of Kopf's e2e
// test (runExample's), with checks of what it did beyond the object's own
// state: the children it made, the Events it posted.
type moreCase struct {
	exampleCase
	// updatedFinalizers are the object's finalizers after the update.
	updatedFinalizers []string
	// created runs once the creation is handled, before the object's
	// state is checked. It checks what the example made, and returns the
	// object's expected status when that depends on it (nil: tc.status).
	created func(t *testing.T, op *operator, ns string, obj *unstructured.Unstructured) map[string]any
	// after runs once the operator has stopped.
	after func(t *testing.T, op *operator, ns string, obj *unstructured.Unstructured)
}

// TestMoreExamples runs the examples 02, 04, 07, 10 and 11 as Kopf's e2e
// test and its test_example_10 and test_example_11 run them, each serving
// a namespace of its own, at once.
func TestMoreExamples(t *testing.T) {
	cases := []moreCase{{
		exampleCase: exampleCase{
			name:      "02-children",
			succeeded: map[string]int{"create_fn": 1},
			failed:    map[string]int{},
			lines: map[string]int{
				"Creation is processed: 1 succeeded; 0 failed.": 1,
				"Adding the finalizer":                          0,
			},
			present: []string{"Creation is in progress:"},
		},
		created: checkChildrenExample,
	}, {
		exampleCase: exampleCase{
			name:      "04-events",
			succeeded: map[string]int{"create_fn": 1},
			failed:    map[string]int{},
			lines: map[string]int{
				"Creation is processed: 1 succeeded; 0 failed.": 1,
				"Adding the finalizer":                          0,
				// Posting fails quietly, but it must not fail here.
				"Failed to post an event": 0,
				"No event is posted":      0,
			},
			present: []string{"Creation is in progress:"},
			// create_fn returns nothing, so there is no status.
		},
		after: checkEventsExample,
	}, {
		exampleCase: exampleCase{
			name:      "07-subhandlers",
			succeeded: map[string]int{"create_fn": 1, "create_fn/item1": 1, "create_fn/item2": 1},
			failed:    map[string]int{},
			lines: map[string]int{
				"=== Handling creation for item1. ===": 1,
				"=== Handling creation for item2. ===": 1,
				// Kopf counts the top-level handlers only.
				"Creation is processed: 1 succeeded; 0 failed.": 1,
				"Adding the finalizer":                          0,
			},
			present: []string{"Creation is in progress:"},
			order: [][]string{{
				"=== Handling creation for item1. ===",
				"Handler 'create_fn/item1' succeeded.",
				"=== Handling creation for item2. ===",
				"Handler 'create_fn/item2' succeeded.",
				"Handler 'create_fn' succeeded.",
				"Creation is processed:",
			}},
			// The sub-handlers' results; the parent returns nothing.
			status: map[string]any{
				"create_fn/item1": map[string]any{"item": "item1"},
				"create_fn/item2": map[string]any{"item": "item2"},
			},
		},
	}, {
		exampleCase: exampleCase{
			name:   "11-filtering-handlers",
			update: true,
			succeeded: map[string]int{
				"create_with_labels_matching":                     1,
				"create_with_labels_present":                      1,
				"create_with_labels_absent":                       1,
				"create_with_labels_callback_matching":            1,
				"create_with_annotations_matching":                1,
				"create_with_annotations_present":                 1,
				"create_with_annotations_absent":                  1,
				"create_with_filter_satisfied":                    1,
				"create_with_field_value_satisfied/spec.field":    1,
				"create_with_field_presence_satisfied/spec.field": 1,
				"update_with_field_change_satisfied/spec.field":   1,
			},
			failed: map[string]int{},
			lines: map[string]int{
				"Label is matching.":           1,
				"Label is present.":            1,
				"Label is absent.":             1,
				"Label callback matching.":     1,
				"Annotation is matching.":      1,
				"Annotation is present.":       1,
				"Annotation is absent.":        1,
				"Filter satisfied.":            1,
				"Field value is satisfied.":    1,
				"Field presence is satisfied.": 1,
				"Field change is satisfied.":   1,
				// The handlers whose filters do not match never run.
				"Annotation callback mismatch.":                  0,
				"Filter not satisfied.":                          0,
				"Field value is not satisfied.":                  0,
				"Field presence is not satisfied.":               0,
				"Creation is processed: 10 succeeded; 0 failed.": 1,
				"Updating is processed: 1 succeeded; 0 failed.":  1,
				// The daemon needs the finalizer while it matches.
				"Adding the finalizer": 1,
			},
			present: []string{
				"Creation is in progress:",
				"Updating is in progress:",
				"Field daemon is satisfied.",
				// The daemon stops matching when spec.field changes, and
				// then nothing needs the finalizer, as in Kopf.
				"Removing the finalizer, as there are no handlers requiring it.",
			},
			order: [][]string{{
				"Adding the finalizer",
				"Field daemon is satisfied.",
				// The cycle that sees the change stops the daemon and
				// removes the finalizer; the next one runs the update.
				"Daemon 'daemon_with_field/spec.field' is signalled to exit",
				"Removing the finalizer, as there are no handlers requiring it.",
				"Field change is satisfied.",
			}, {
				"Daemon 'daemon_with_field/spec.field' is signalled to exit",
				"Daemon 'daemon_with_field/spec.field' has exited on request and will not be retried or restarted.",
			}},
			finalizers: []string{finalizer},
		},
		created: waitForFilteringDaemon,
		// The daemon no longer matches after the update.
		updatedFinalizers: nil,
		after:             checkFilteringExample,
	}}
	for _, mc := range cases {
		t.Run(mc.name, func(t *testing.T) {
			t.Parallel()
			runMoreExample(t, mc)
		})
	}
	t.Run("10-builtins", func(t *testing.T) {
		t.Parallel()
		runBuiltinsExample(t)
	})
	t.Run("10-builtins-resumed", func(t *testing.T) {
		t.Parallel()
		runBuiltinsResumed(t)
	})
}

// runMoreExample runs an example as runExample does, with the case's
// extra checks.
func runMoreExample(t *testing.T, mc moreCase) {
	ctx := context.Background()
	tc := mc.exampleCase
	ns := env.Namespace(t)
	op := startExample(t, tc.name, ns)
	op.waitForLine(t, "Starting workers")

	obj := exampleObject(t, ns)
	if err := env.Client.Create(ctx, obj); err != nil {
		t.Fatalf("create the object: %v", err)
	}
	key := client.ObjectKeyFromObject(obj)
	for _, line := range orDefault(tc.created, "Creation is processed:") {
		op.waitForLine(t, line)
	}
	if mc.created != nil {
		if status := mc.created(t, op, ns, obj); status != nil {
			tc.status = status
		}
	}
	essence := map[string]any{
		"spec": map[string]any{"duration": "1m", "field": "value", "items": []any{"item1", "item2"}},
		"metadata": map[string]any{
			"labels":      map[string]any{"somelabel": "somevalue"},
			"annotations": map[string]any{"someannotation": "somevalue"},
		},
	}
	waitForState(t, op, key, tc, essence)

	if tc.update {
		patch := []byte(`{"spec": {"field": "changed"}}`)
		if err := env.Client.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch)); err != nil {
			t.Fatalf("patch spec.field: %v", err)
		}
		op.waitForLine(t, "Updating is processed:")
		essence["spec"].(map[string]any)["field"] = "changed"
		updated := tc
		updated.finalizers = mc.updatedFinalizers
		waitForState(t, op, key, updated, essence)
	}

	if err := env.Client.Delete(ctx, obj); err != nil {
		t.Fatalf("delete the object: %v", err)
	}
	op.waitFor(t, "the object is gone", func() bool {
		err := env.Client.Get(ctx, key, newObject())
		return err != nil && client.IgnoreNotFound(err) == nil
	})
	for _, line := range orDefault(tc.deleted, "Deleted, really deleted") {
		op.waitForLine(t, line)
	}
	op.stop(t)

	checkOutput(t, op, tc)
	if mc.after != nil {
		mc.after(t, op, ns, obj)
	}
}

// checkOutput makes the checks of an example's output that every case
// states in its exampleCase.
func checkOutput(t *testing.T, op *operator, tc exampleCase) {
	t.Helper()
	if diff := cmp.Diff(tc.succeeded, op.counts(succeededRE)); diff != "" {
		t.Errorf("handlers that succeeded, and how often (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(tc.failed, op.counts(failedRE)); diff != "" {
		t.Errorf("handlers that failed for good, and how often (-want +got):\n%s", diff)
	}
	for line, want := range tc.lines {
		if got := op.count(line); got != want {
			t.Errorf("the output has %q %d times, want %d", line, got, want)
		}
	}
	for _, line := range tc.present {
		if op.count(line) == 0 {
			t.Errorf("the output lacks %q", line)
		}
	}
	for _, order := range tc.order {
		checkOrder(t, op.Output(), order)
	}
	if n := op.count("\tERROR\t"); n != tc.errorLines && !tc.allowErrors {
		t.Errorf("the output has %d error lines, want %d", n, tc.errorLines)
	}
	if n := op.count("panic"); n > 0 {
		t.Errorf("the output mentions a panic %d times", n)
	}
}

// checkChildrenExample checks the Pod that 02-children makes for the
// object, as kopf.adopt makes it: owned by the object, named after it, in
// its namespace, with its labels (and its kind's). It returns the object's expected status,
// which holds the Pod's uid.
func checkChildrenExample(t *testing.T, _ *operator, ns string, obj *unstructured.Unstructured) map[string]any {
	t.Helper()
	var pods corev1.PodList
	if err := env.Client.List(context.Background(), &pods, client.InNamespace(ns)); err != nil {
		t.Fatalf("list the pods: %v", err)
	}
	if len(pods.Items) != 1 {
		t.Fatalf("the namespace has %d pods, want 1", len(pods.Items))
	}
	pod := pods.Items[0]
	wantRefs := []metav1.OwnerReference{{
		APIVersion:         "kopf.dev/v1",
		Kind:               "KopfExample",
		Name:               obj.GetName(),
		UID:                obj.GetUID(),
		Controller:         ptr.To(true),
		BlockOwnerDeletion: ptr.To(true),
	}}
	if diff := cmp.Diff(wantRefs, pod.OwnerReferences); diff != "" {
		t.Errorf("the pod's owner references (-want +got):\n%s", diff)
	}
	if want := obj.GetName() + "-"; pod.GenerateName != want || !strings.HasPrefix(pod.Name, want) {
		t.Errorf("the pod is named %q from %q, want a name generated from %q", pod.Name, pod.GenerateName, want)
	}
	// The owner's labels, and the owner's kind (which Kopf's adopt does
	// not add: handlers.Children watches children by it).
	if diff := cmp.Diff(map[string]string{"somelabel": "somevalue", hierarchies.OwnerKindLabel: "kopfexample.kopf.dev"}, pod.Labels); diff != "" {
		t.Errorf("the pod's labels (-want +got):\n%s", diff)
	}
	// The pod is rendered from the object's spec.
	if len(pod.Spec.Containers) != 1 {
		t.Fatalf("the pod has %d containers, want 1", len(pod.Spec.Containers))
	}
	c := pod.Spec.Containers[0]
	got := []string{c.Name, c.Image, strings.Join(c.Command, " "), strings.Join(c.Args, "|"), fmt.Sprint(c.Env)}
	want := []string{"the-only-one", "busybox", "sh -x -c", "echo \"FIELD=$FIELD\"\nsleep 1m\n",
		fmt.Sprint([]corev1.EnvVar{{Name: "FIELD", Value: "value"}})}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the pod's container (-want +got):\n%s", diff)
	}
	return map[string]any{"create_fn": map[string]any{"children": []any{string(pod.UID)}}}
}

// moreEvent is what an Event of 04-events says, and about what.
type moreEvent struct {
	Type, Reason, Message, Component string
	Involved                         corev1.ObjectReference
}

// checkEventsExample checks the Events that 04-events posts about the object:
// those of kopf.event, kopf.info, kopf.warn and kopf.exception, and no
// others (posting log lines as Events is off by default).
func checkEventsExample(t *testing.T, _ *operator, ns string, obj *unstructured.Unstructured) {
	t.Helper()
	var events corev1.EventList
	if err := env.Client.List(context.Background(), &events, client.InNamespace(ns)); err != nil {
		t.Fatalf("list the events: %v", err)
	}
	about := corev1.ObjectReference{APIVersion: "kopf.dev/v1", Kind: "KopfExample", Namespace: ns,
		Name: obj.GetName(), UID: obj.GetUID()}
	want := []moreEvent{
		{"Error", "SomeReason", "Some exception: Exception text.", "kopf", about},
		{"Normal", "SomeReason", "Some message", "kopf", about},
		{"SomeType", "SomeReason", "Some message", "kopf", about},
		{"Warning", "SomeReason", "Some message", "kopf", about},
	}
	var got []moreEvent
	for _, e := range events.Items {
		got = append(got, moreEvent{e.Type, e.Reason, e.Message, e.Source.Component, e.InvolvedObject})
	}
	slices.SortFunc(got, func(a, b moreEvent) int { return strings.Compare(a.Type, b.Type) })
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the events in the namespace (-want +got):\n%s", diff)
	}
}

// waitForFilteringDaemon waits until the daemon of 11-filtering-handlers
// has logged twice: it runs on, as Kopf's test lets it run for seconds.
func waitForFilteringDaemon(t *testing.T, op *operator, _ string, _ *unstructured.Unstructured) map[string]any {
	t.Helper()
	op.waitFor(t, "the daemon logs twice", func() bool { return op.count("Field daemon is satisfied.") >= 2 })
	return nil
}

// checkFilteringExample checks that the lines of 11-filtering-handlers
// are about the object, as Kopf's test_example_11 does with its
// "[default/kopf-example-1]" prefix, and that the daemon, stopped when
// spec.field changed, logged nothing after it exited.
func checkFilteringExample(t *testing.T, op *operator, _ string, obj *unstructured.Unstructured) {
	t.Helper()
	for _, line := range []string{"Label is matching.", "Label is present.", "Label is absent.",
		"Label callback matching.", "Annotation is matching.", "Annotation is present.",
		"Annotation is absent.", "Filter satisfied.", "Field value is satisfied.",
		"Field presence is satisfied.", "Field change is satisfied.", "Field daemon is satisfied."} {
		checkLineAbout(t, op, line, obj.GetName())
	}
	out := op.Output()
	exited := strings.Index(out, "Daemon 'daemon_with_field/spec.field' has exited on request")
	if last := strings.LastIndex(out, "Field daemon is satisfied."); exited < 0 || last > exited {
		t.Errorf("the daemon logged at %d, after it exited at %d", last, exited)
	}
}

// checkLineAbout checks that the output has the line with the object's
// name among its values.
func checkLineAbout(t *testing.T, op *operator, line, name string) {
	t.Helper()
	re := regexp.MustCompile(regexp.QuoteMeta(line) + `\t\{[^\n]*"name": "` + regexp.QuoteMeta(name) + `"`)
	if !re.MatchString(op.Output()) {
		t.Errorf("the output has no line %q about %s", line, name)
	}
}
