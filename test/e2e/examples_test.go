package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/kopf-go/kopf/test/testenv"
)

// The wire names the examples leave on the object, as Python Kopf's.
const (
	annotationPrefix = "kopf.zalando.org/"
	lastHandled      = "kopf.zalando.org/last-handled-configuration"
	finalizer        = "kopf.zalando.org/KopfFinalizerMarker"
)

// Kopf's e2e test counts handler outcomes with these patterns. Daemons and
// timers fail for good as handlers do; their successes are checked as
// lines, since a timer succeeds once per tick.
var (
	succeededRE = regexp.MustCompile(`Handler '(.+?)' succeeded\.`)
	failedRE    = regexp.MustCompile(`(?:Handler|Daemon|Timer) '(.+?)' failed (?:permanently|with an exception and will stop)`)
)

// exampleCase is one example's run and what its output and object must show.
type exampleCase struct {
	name string
	// update patches spec.field to "changed" after the creation.
	update bool
	// created are the lines that show that the creation is handled, and
	// deleted those to wait for once the object is gone (Kopf's
	// E2E_CREATION_STOP_WORDS and E2E_DELETION_STOP_WORDS); all of them
	// must appear. The defaults suit change handlers.
	created, deleted []string
	// spawningOnly: the example has only daemons and timers. No change
	// handler needs the last handled essence, so none is stored, as in
	// Kopf; daemons and timers keep no state on the object.
	spawningOnly bool
	// succeeded and failed are the exact counts of the outcome lines per
	// handler id, over the whole run.
	succeeded, failed map[string]int
	// lines are substrings of the output with their exact counts.
	lines map[string]int
	// present are substrings that appear at least once (in-progress lines
	// repeat once per processing cycle, as in Kopf).
	present []string
	// allowErrors permits error-level log lines, which carry Go stack
	// traces: Kopf's E2E_ALLOW_TRACEBACKS.
	allowErrors bool
	// errorLines is the exact number of error-level log lines otherwise:
	// Kopf logs temporary failures at the error level, without a traceback.
	errorLines int
	// order lists sequences of substrings; each sequence must appear in
	// its order.
	order [][]string
	// status is the object's status once a cause is fully handled.
	status map[string]any
	// finalizers are the object's finalizers while it is not deleted.
	finalizers []string
	// frozen: before the operator starts, `kopf freeze` puts a live record
	// of a higher priority into the namespace's KopfPeering "default". A
	// standalone operator must ignore it, and leave it as it is.
	frozen bool
}

func TestExamples(t *testing.T) {
	cases := []exampleCase{{
		name:      "01-minimal",
		succeeded: map[string]int{"create_fn": 1},
		failed:    map[string]int{},
		lines: map[string]int{
			"And here we are! Creating: map[duration:1m field:value items:[item1 item2]]": 1,
			"Creation is processed: 1 succeeded; 0 failed.":                               1,
			// Without delete handlers, nothing needs the finalizer.
			"Adding the finalizer": 0,
		},
		present: []string{"Creation is in progress:"},
		status:  map[string]any{"create_fn": map[string]any{"message": "hello world"}},
	}, {
		name:      "03-exceptions",
		succeeded: map[string]int{"eventual_success_with_a_few_messages": 1},
		failed: map[string]int{
			"instant_failure_with_only_a_message": 1,
			"eventual_failure_with_tracebacks":    1,
			"instant_failure_with_traceback":      1,
		},
		lines: map[string]int{
			// A temporary error at retries 0, 1 and 2, success at 3.
			"Handler 'eventual_success_with_a_few_messages' is invoked.":                  4,
			"Handler 'eventual_success_with_a_few_messages' failed temporarily: Expected": 3,
			// Retries(3) means three attempts in all.
			"Handler 'eventual_failure_with_tracebacks' is invoked.":                                    3,
			"Handler 'eventual_failure_with_tracebacks' failed with an exception and will try again in": 2,
			"it would exceed 3 retries on the next attempt":                                             1,
			"Handler 'instant_failure_with_traceback' is invoked.":                                      1,
			"Handler 'instant_failure_with_only_a_message' is invoked.":                                 1,
			"Handler 'instant_failure_with_only_a_message' failed permanently: Fail once and for all.":  1,
			"Creation is processed: 1 succeeded; 3 failed.":                                             1,
			"Adding the finalizer": 0,
		},
		present:     []string{"Creation is in progress:"},
		allowErrors: true,
	}, {
		name:   "05-handlers",
		update: true,
		succeeded: map[string]int{
			"create_fn_1": 1, "create_fn_2": 1, "update_fn": 1, "delete_fn_1": 1, "delete_fn_2": 1,
			// The field handler runs on creation (the field appears) and
			// on the update that changes it.
			"field_fn/spec.field": 2,
		},
		failed: map[string]int{},
		lines: map[string]int{
			"CREATED 1st": 1, "CREATED 2nd": 1, "UPDATED": 1, "DELETED 1st": 1, "DELETED 2nd": 1,
			"FIELD CHANGED: <nil> -> value":   1,
			"FIELD CHANGED: value -> changed": 1,
			// Resume handlers run only for objects that exist when the
			// operator starts.
			"RESUMED":              0,
			"Adding the finalizer": 1,
			"Creation is processed: 3 succeeded; 0 failed.": 1,
			"Updating is processed: 2 succeeded; 0 failed.": 1,
			"Deletion is processed: 2 succeeded; 0 failed.": 1,
		},
		present: []string{"Creation is in progress:", "Updating is in progress:", "Deletion is in progress:",
			"Removing the finalizer, thus allowing the actual deletion."},
		order: [][]string{{"CREATED 1st", "CREATED 2nd", "FIELD CHANGED: <nil> -> value",
			"UPDATED", "FIELD CHANGED: value -> changed", "DELETED 1st", "DELETED 2nd"}},
		finalizers: []string{finalizer},
	}, {
		// Kopf's e2e test runs this example standalone too: the peering
		// itself is tested in test/integration.
		name:      "06-peering",
		frozen:    true,
		succeeded: map[string]int{"create_fn": 1},
		failed:    map[string]int{},
		lines: map[string]int{
			"Creation is processed: 1 succeeded; 0 failed.": 1,
			"Adding the finalizer":                          0,
			// Standalone: no records, no pauses.
			"Keep-alive":                 0,
			"Pausing":                    0,
			"Possibly conflicting":       0,
			"The operator starts frozen": 0,
		},
		present: []string{"Creation is in progress:"},
		// create_fn returns nothing, so there is no status.
	}, {
		name: "14-daemons",
		// Each daemon fails at retries 0, 1 and 2 with a delay of 1 s,
		// then pings.
		created: []string{"=> Ping from a sync daemon", "=> Ping from an async daemon"},
		deleted: []string{
			"Daemon 'background_sync' has exited on request",
			"Daemon 'background_async' has exited on request",
		},
		spawningOnly: true,
		succeeded:    map[string]int{},
		failed:       map[string]int{},
		lines: map[string]int{
			// No change handlers, so no change processing (as in Kopf).
			"is processed:": 0,
			"Daemon 'background_sync' failed temporarily: Simulated failure.":  3,
			"Daemon 'background_async' failed temporarily: Simulated failure.": 3,
			// The daemons do not return on their own within the test.
			"has exited on its own": 0,
			// The sync daemon wakes from its sleep when stopped, finishes
			// its work and returns.
			"Daemon 'background_sync' succeeded.":                                                  1,
			"Daemon 'background_sync' has exited on request and will not be retried or restarted.": 1,
			"Daemon 'background_sync' is cancelled.":                                               0,
			"Daemon 'background_sync' is signalled to exit gracefully.":                            0,
			// The async daemon ignores the stop signal: it is cancelled
			// after its cancellation backoff, and exits in time.
			"Daemon 'background_async' is signalled to exit gracefully.":                            1,
			"Daemon 'background_async' is signalled to exit by force.":                              1,
			"Daemon 'background_async' is cancelled.":                                               1,
			"Daemon 'background_async' succeeded.":                                                  0,
			"Daemon 'background_async' has exited on request and will not be retried or restarted.": 1,
			"Leaving it orphaned.":                                                                  0,
			"Removing the finalizer, as there are no handlers requiring it.":                        0,
		},
		present: []string{
			// Twice when a daemon's first write races the finalizer's.
			"Adding the finalizer",
			`=> Ping from a sync daemon: field="value", retry=3`,
			`=> Ping from an async daemon: field="value"`,
			"Removing the finalizer, thus allowing the actual deletion.",
		},
		// The six temporary failures.
		errorLines: 6,
		order: [][]string{{
			"Adding the finalizer",
			"=> Ping from a sync daemon",
			"Daemon 'background_sync' succeeded.",
			"Daemon 'background_sync' has exited on request",
			"Removing the finalizer, thus allowing the actual deletion.",
		}, {
			"=> Ping from an async daemon",
			"Daemon 'background_async' is signalled to exit gracefully.",
			"Daemon 'background_async' is signalled to exit by force.",
			"Daemon 'background_async' is cancelled.",
			"Daemon 'background_async' has exited on request",
			"Removing the finalizer, thus allowing the actual deletion.",
		}},
		// The sync daemon's three failed attempts wrote it.
		status:     map[string]any{"message": "Failed 3 times."},
		finalizers: []string{finalizer},
	}, {
		name: "15-timers",
		// The timers wait until the object has been left alone for 5 s and
		// 10 s.
		created: []string{"Ping from a sync timer", "Ping from an async timer"},
		deleted: []string{
			"Timer 'every_few_seconds_sync' has exited on request",
			"Timer 'every_few_seconds_async' has exited on request",
		},
		spawningOnly: true,
		succeeded:    map[string]int{},
		failed:       map[string]int{},
		lines: map[string]int{
			// No change handlers, so no change processing (as in Kopf).
			"is processed:":         0,
			"has exited on its own": 0,
			"Adding the finalizer":  1,
			"Removing the finalizer, as there are no handlers requiring it.": 0,
		},
		present: []string{
			`Ping from a sync timer: field="value"`,
			`Ping from an async timer: field="value"`,
			// Once per tick.
			"Timer 'every_few_seconds_sync' succeeded.",
			"Timer 'every_few_seconds_async' succeeded.",
			"Removing the finalizer, thus allowing the actual deletion.",
		},
		order: [][]string{{
			"Adding the finalizer",
			"Timer 'every_few_seconds_sync' has exited on request",
			"Removing the finalizer, thus allowing the actual deletion.",
		}, {
			"Adding the finalizer",
			"Timer 'every_few_seconds_async' has exited on request",
			"Removing the finalizer, thus allowing the actual deletion.",
		}},
		// Timers that return nothing leave no status.
		finalizers: []string{finalizer},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			runExample(t, tc)
		})
	}
}

// runExample runs one example through a create, an optional update and a
// delete of the example object, stops it, and checks what it did.
func runExample(t *testing.T, tc exampleCase) {
	ctx := context.Background()
	ns := env.Namespace(t)
	if tc.frozen {
		freeze(t, ns)
	}
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
		waitForState(t, op, key, tc, essence)
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
	if tc.frozen {
		checkFrozen(t, ns)
	}
}

// waitForState waits until the object shows a fully handled cause: the
// expected status and finalizers, no progress annotations, and the given
// essence as the last handled one.
func waitForState(t *testing.T, op *operator, key client.ObjectKey, tc exampleCase, essence map[string]any) {
	t.Helper()
	want := objectState{Status: tc.status, Annotations: []string{lastHandled}, Finalizers: tc.finalizers, Essence: essence}
	if tc.spawningOnly {
		want.Annotations, want.Essence = nil, nil
	}
	var diff string
	defer func() {
		// A failed wait ends the test with runtime.Goexit, which runs this.
		if t.Failed() {
			t.Logf("the object's state (-want +got):\n%s", diff)
		}
	}()
	op.waitFor(t, "the object's state is clean", func() bool {
		obj := newObject()
		if err := env.Client.Get(context.Background(), key, obj); err != nil {
			diff = err.Error()
			return false
		}
		diff = cmp.Diff(want, stateOf(t, obj))
		return diff == ""
	})
}

// objectState is what the framework leaves on an object.
type objectState struct {
	Status      map[string]any
	Annotations []string
	Finalizers  []string
	Essence     map[string]any
}

func stateOf(t *testing.T, obj *unstructured.Unstructured) objectState {
	t.Helper()
	var s objectState
	s.Status, _, _ = unstructured.NestedMap(obj.Object, "status")
	for k, v := range obj.GetAnnotations() {
		if !strings.HasPrefix(k, annotationPrefix) {
			continue
		}
		s.Annotations = append(s.Annotations, k)
		if k == lastHandled {
			if err := json.Unmarshal([]byte(v), &s.Essence); err != nil {
				t.Errorf("parse %s: %v", k, err)
			}
		}
	}
	slices.Sort(s.Annotations)
	if len(s.Status) == 0 {
		s.Status = nil
	}
	s.Finalizers = obj.GetFinalizers()
	return s
}

// orDefault returns the lines, or the default line if there are none.
func orDefault(lines []string, def string) []string {
	if len(lines) == 0 {
		return []string{def}
	}
	return lines
}

// checkOrder fails the test unless the substrings appear in this order.
func checkOrder(t *testing.T, output string, order []string) {
	t.Helper()
	at := 0
	for _, s := range order {
		i := strings.Index(output[at:], s)
		if i < 0 {
			t.Errorf("the output lacks %q after the lines before it; want the order %q", s, order)
			return
		}
		at += i + len(s)
	}
}

// exampleObject reads examples/obj.yaml and puts it into the namespace.
func exampleObject(t *testing.T, namespace string) *unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testenv.Root(), "examples", "obj.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	obj := newObject()
	if err := yaml.Unmarshal(data, &obj.Object); err != nil {
		t.Fatalf("parse examples/obj.yaml: %v", err)
	}
	obj.SetNamespace(namespace)
	return obj
}

func newObject() *unstructured.Unstructured {
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion("kopf.dev/v1")
	obj.SetKind("KopfExample")
	return obj
}
