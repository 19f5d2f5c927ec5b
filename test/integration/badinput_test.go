package integration

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/handlers"

	"github.com/kopf-go/kopf/pkg/cause"
)

// events returns "type/reason" of the Events about an object.
func events(t *testing.T, namespace, name string) []string {
	t.Helper()
	var out []string
	for _, ev := range objectEvents(t, namespace, name) {
		out = append(out, ev.Type+"/"+ev.Reason)
	}
	return out
}

func hasEvent(t *testing.T, namespace, name, typeAndReason string) bool {
	for _, e := range events(t, namespace, name) {
		if e == typeAndReason {
			return true
		}
	}
	return false
}

// checkEventFields asserts that the Event carries Kopf's fields.
func checkEventFields(t *testing.T, namespace, name, reason string) {
	t.Helper()
	var list corev1.EventList
	if err := env.Client.List(context.Background(), &list, client.InNamespace(namespace)); err != nil {
		t.Fatal(err)
	}
	obj := get(t, namespace, name)
	for _, ev := range list.Items {
		if ev.InvolvedObject.Name != name || ev.Reason != reason {
			continue
		}
		got := []string{ev.GenerateName, ev.Source.Component, ev.ReportingController, ev.ReportingInstance,
			ev.InvolvedObject.APIVersion, ev.InvolvedObject.Kind, ev.InvolvedObject.Namespace, string(ev.InvolvedObject.UID), ev.Type}
		want := []string{"kopf-event-", "kopf", "kopf", "dev", "kopf.dev/v1", "KopfExample", namespace, string(obj.GetUID()), "Warning"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("event fields -want +got:\n%s", diff)
		}
		if ev.Message == "" || ev.EventTime.IsZero() || ev.FirstTimestamp.IsZero() {
			t.Errorf("event %+v lacks a message or times", ev)
		}
		return
	}
	t.Errorf("no %s event about %s", reason, name)
}

// A progress record that cannot be read (not JSON, or wrong types) is
// reported once, ignored, and overwritten: the handler runs as if for the
// first time. Unknown fields in a good record are tolerated.
func TestMalformedProgress(t *testing.T) {
	for _, tc := range []struct {
		name, value string
		wantCalls   int
		wantEvent   bool
	}{
		{"not JSON", "{not json", 1, true},
		{"wrong types", `{"retries":"three","success":"yes"}`, 1, true},
		{"unknown fields", `{"started":"2020-01-01T00:00:00","stopped":"2020-01-01T00:00:01Z","purpose":"create","retries":1,"success":true,"failure":false,"from":"the future"}`, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkLeaks(t)
			ns := env.Namespace(t)
			reg, kind := kex()
			var seen calls
			handlers.OnCreate(kind, "create_a", seen.record)
			handlers.OnCreate(kind, "create_b", seen.record)
			obj := exampleObject(t, ns)
			obj.SetAnnotations(map[string]string{"someannotation": "somevalue", "kopf.zalando.org/create_a": tc.value})
			create(t, obj)
			op := env.StartOperator(t, ns, reg, handlers.Options{})

			eventually(t, "creation is handled", func() bool {
				_, left := get(t, ns, "kopf-example-1").GetAnnotations()["kopf.zalando.org/create_a"]
				return len(seen.of("create_b")) == 1 && !left
			})
			if n := len(seen.of("create_a")); n != tc.wantCalls {
				t.Errorf("create_a ran %d times, want %d", n, tc.wantCalls)
			}
			if got := len(op.Logs.Messages("The progress of handler 'create_a' cannot be read")) > 0; got != tc.wantEvent {
				t.Errorf("problem logged: %v, want %v", got, tc.wantEvent)
			}
			if tc.wantEvent {
				eventually(t, "a warning event is posted", func() bool { return hasEvent(t, ns, "kopf-example-1", "Warning/InvalidProgress") })
			}
		})
	}
}

// A last handled configuration that cannot be read stops change handling
// for the object (there is no telling what changed), with a log line and
// one Warning Event, without loops; deletion still works, and removing the
// annotation makes the object new.
func TestMalformedDiffBase(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	reg, kind := kex()
	var seen calls
	handlers.OnCreate(kind, "create_fn", seen.record)
	handlers.OnUpdate(kind, "update_fn", seen.record)
	handlers.OnDelete(kind, "delete_fn", seen.record)
	obj := exampleObject(t, ns)
	obj.SetAnnotations(map[string]string{"kopf.zalando.org/last-handled-configuration": `["not", "an", "object"]`})
	obj.SetFinalizers([]string{finalizer})
	create(t, obj)
	op := env.StartOperator(t, ns, reg, handlers.Options{})

	eventually(t, "the problem is posted", func() bool {
		return hasEvent(t, ns, "kopf-example-1", "Warning/InvalidLastHandledConfiguration")
	})
	mergePatch(t, ns, "kopf-example-1", `{"spec":{"field":"changed"}}`, false)
	eventually(t, "the change is seen", func() bool {
		return len(op.Logs.Messages("The last handled configuration cannot be read")) >= 2
	})
	if n := len(seen.all()); n != 0 {
		t.Errorf("%d handler calls with an unreadable diffbase, want none", n)
	}
	checkEventFields(t, ns, "kopf-example-1", "InvalidLastHandledConfiguration")
	var warnings int
	for _, e := range events(t, ns, "kopf-example-1") {
		if e == "Warning/InvalidLastHandledConfiguration" {
			warnings++
		}
	}
	if warnings != 1 {
		t.Errorf("%d warning events, want 1 for the same bad value", warnings)
	}

	mergePatch(t, ns, "kopf-example-1", `{"metadata":{"annotations":{"kopf.zalando.org/last-handled-configuration":null}}}`, false)
	eventually(t, "the object is handled as new", func() bool { return len(seen.of("create_fn")) == 1 })
	mergePatch(t, ns, "kopf-example-1", `{"metadata":{"annotations":{"kopf.zalando.org/last-handled-configuration":"{broken"}}}`, false)
	if err := env.Client.Delete(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the object is deleted", func() bool { return gone(t, ns, "kopf-example-1") })
	if n := len(seen.of("delete_fn")); n != 1 {
		t.Errorf("delete_fn ran %d times, want 1", n)
	}
}

// An object deleted while its handler runs: the write finds it gone, says
// so, and nothing fails or loops.
func TestObjectDeletedDuringHandler(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	reg, kind := kex()
	var seen calls
	started, release := make(chan struct{}), make(chan struct{})
	handlers.OnCreate(kind, "slow_fn", func(ctx context.Context, obj *unstructured.Unstructured, c *cause.Change) (any, error) {
		seen.add(c)
		close(started)
		<-release
		return map[string]any{"late": true}, nil
	})
	op := env.StartOperator(t, ns, reg, handlers.Options{})
	create(t, exampleObject(t, ns))
	<-started
	if err := env.Client.Delete(context.Background(), exampleObject(t, ns)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the object is gone", func() bool { return gone(t, ns, "kopf-example-1") })
	close(release)
	eventually(t, "the skipped write is logged", func() bool {
		return op.Logs.Count("Patching was skipped: the object does not exist anymore.") == 1
	})
	eventually(t, "the deletion is noticed", func() bool {
		return op.Logs.Count("Deleted, really deleted, and we are notified.") >= 1
	})
	if n := len(seen.of("slow_fn")); n != 1 {
		t.Errorf("slow_fn ran %d times, want 1", n)
	}
	if errs := op.Logs.Messages("Reconciler error"); len(errs) != 0 {
		t.Errorf("reconciler errors: %v", errs)
	}
}

// A conflict on the write that adds the finalizer (someone else changed the
// object) is retried; an API error on a write keeps the cycle's changes and
// writes them first in the next cycle, so the handler does not run again.
func TestConflictsAndAPIErrors(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	reg, kind := kex()
	var seen calls
	handlers.OnCreate(kind, "create_fn", func(ctx context.Context, obj *unstructured.Unstructured, c *cause.Change) (any, error) {
		seen.add(c)
		return map[string]any{"message": "hello"}, nil
	})
	handlers.OnDelete(kind, "delete_fn", nothing)
	conflict := apierrors.NewConflict(schema.GroupResource{Group: "kopf.dev", Resource: "kopfexamples"}, "kopf-example-1", nil)
	unavailable := apierrors.NewInternalError(errString("the API server is having a bad day"))
	conflictOnce := once(containing(finalizer), conflict)
	errorOnce := once(func(_ string, status bool) bool { return status }, unavailable)
	f := &faults{fail: func(data string, status bool) error {
		if err := conflictOnce(data, status); err != nil {
			return err
		}
		return errorOnce(data, status)
	}}
	op := env.StartOperator(t, ns, reg, handlers.Options{WrapClient: f.wrap})
	create(t, exampleObject(t, ns))

	eventually(t, "creation is handled", func() bool {
		obj := get(t, ns, "kopf-example-1")
		msg, _, _ := unstructured.NestedString(obj.Object, "status", "create_fn", "message")
		return msg == "hello" && obj.GetAnnotations()["kopf.zalando.org/last-handled-configuration"] != ""
	})
	if n := len(seen.of("create_fn")); n != 1 {
		t.Errorf("create_fn ran %d times, want 1", n)
	}
	if len(op.Logs.Messages("The object changed while its finalizer was being updated")) != 1 {
		t.Error("the finalizer conflict was not logged")
	}
	if len(op.Logs.Messages("Writing the changes that the previous cycle could not write.")) != 1 {
		t.Error("the unwritten changes were not written in the next cycle")
	}
}

type errString string

func (e errString) Error() string { return string(e) }

// An essence too large for the annotations is not written (the API server
// would refuse the whole write); it is kept in memory, the problem is
// posted, the handler's result still lands, and nothing loops.
func TestOversizedDiffBase(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	reg, kind := kex()
	var seen calls
	record := func(ctx context.Context, obj *unstructured.Unstructured, c *cause.Change) (any, error) {
		seen.add(c)
		return "done", nil
	}
	handlers.OnCreate(kind, "create_fn", record)
	handlers.OnUpdate(kind, "update_fn", record)
	obj := exampleObject(t, ns)
	if err := unstructured.SetNestedField(obj.Object, strings.Repeat("x", 300*1024), "spec", "blob"); err != nil {
		t.Fatal(err)
	}
	create(t, obj)
	env.StartOperator(t, ns, reg, handlers.Options{})

	eventually(t, "the result lands", func() bool {
		s, _, _ := unstructured.NestedString(get(t, ns, "kopf-example-1").Object, "status", "create_fn")
		return s == "done"
	})
	eventually(t, "the problem is posted", func() bool {
		return hasEvent(t, ns, "kopf-example-1", "Warning/LastHandledConfigurationTooLarge")
	})
	if _, ok := get(t, ns, "kopf-example-1").GetAnnotations()["kopf.zalando.org/last-handled-configuration"]; ok {
		t.Error("the oversized diffbase was written")
	}
	mergePatch(t, ns, "kopf-example-1", `{"status":{"poke":1}}`, true)
	mergePatch(t, ns, "kopf-example-1", `{"metadata":{"labels":{"more":"yes"}}}`, false)
	eventually(t, "the label change is an update", func() bool { return len(seen.of("update_fn")) == 1 })
	if d := seen.of("update_fn")[0].Diff; d != `(('add', ('metadata', 'labels', 'more'), None, 'yes'),)` {
		t.Errorf("update diff = %s, want only the new label (the essence in memory is the base)", d)
	}
	if n := len(seen.of("create_fn")); n != 1 {
		t.Errorf("create_fn ran %d times, want 1", n)
	}
}

// throttled names the delay of Kopf's that a jittered delay in seconds
// comes from: one of the delays, or up to half of it more.
func throttled(seconds float64) string {
	for _, d := range []float64{1, 2, 3, 5} {
		if seconds >= d && seconds < d*1.5 {
			return fmt.Sprintf("%g s and its jitter", d)
		}
	}
	return fmt.Sprintf("%g s, no delay of Kopf's with its jitter", seconds)
}

// Kopf's acceptance item 26: unexpected errors (the API server failing)
// throttle the object with Kopf's delays, and say so; once it works again,
// the latest state is handled and the throttling ends.
func TestThrottlingUnexpectedErrors(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	reg, kind := kex()
	var seen calls
	handlers.OnCreate(kind, "create_fn", func(ctx context.Context, obj *unstructured.Unstructured, c *cause.Change) (any, error) {
		seen.add(c)
		return map[string]any{"message": "hello"}, nil
	})
	failures := 3
	f := &faults{fail: func(data string, status bool) error {
		if status && failures > 0 {
			failures--
			return apierrors.NewInternalError(errString("the API server is down"))
		}
		return nil
	}}
	op := env.StartOperator(t, ns, reg, handlers.Options{WrapClient: f.wrap})
	create(t, exampleObject(t, ns))
	eventually(t, "the object is handled after the throttling", func() bool {
		msg, _, _ := unstructured.NestedString(get(t, ns, "kopf-example-1").Object, "status", "create_fn", "message")
		return msg == "hello" && op.Logs.Count("Throttling is over. Switching back to normal operations.") == 1
	})
	// Kopf's delays, 1, 1 and 2 s, each with its jitter: up to half of it
	// more.
	var delays []string
	for _, line := range op.Logs.Messages("Throttling for ") {
		seconds, err := strconv.ParseFloat(strings.Fields(line)[2], 64)
		if err != nil {
			t.Fatalf("the delay of %q: %v", line, err)
		}
		delays = append(delays, throttled(seconds))
	}
	if diff := cmp.Diff([]string{"1 s and its jitter", "1 s and its jitter", "2 s and its jitter"}, delays); diff != "" {
		t.Errorf("throttling delays -want +got:\n%s", diff)
	}
	if n := len(seen.of("create_fn")); n != 1 {
		t.Errorf("create_fn ran %d times, want 1: its outcome must survive the failed writes", n)
	}
}
