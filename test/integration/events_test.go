package integration

import (
	"context"
	"errors"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/handlers"
	"github.com/kopf-go/kopf/internal/posting"

	"github.com/kopf-go/kopf/pkg/cause"
)

// objectEvents are the Events about an object.
func objectEvents(t *testing.T, namespace, name string) []corev1.Event {
	t.Helper()
	var list corev1.EventList
	if err := env.Client.List(context.Background(), &list, client.InNamespace(namespace)); err != nil {
		t.Fatal(err)
	}
	var out []corev1.Event
	for _, ev := range list.Items {
		if ev.InvolvedObject.Name == name {
			out = append(out, ev)
		}
	}
	return out
}

// eventsAbout lists "type/reason/message" of the Events about an object.
func eventsAbout(t *testing.T, namespace, name string) []string {
	t.Helper()
	var out []string
	for _, ev := range objectEvents(t, namespace, name) {
		out = append(out, ev.Type+"/"+ev.Reason+"/"+ev.Message)
	}
	return out
}

// Kopf's acceptance item 20, through the engine: handlers post Events about
// their objects with the posting functions; by default, log lines post
// nothing.
func TestHandlersPostEvents(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	reg, kind := kex()
	handlers.OnCreate(kind, "create_fn", func(ctx context.Context, obj *unstructured.Unstructured, c *cause.Change) (any, error) {
		handlers.PostEvent(ctx, obj, "SomeType", "SomeReason", "Some message")
		handlers.PostInfo(ctx, obj, "SomeReason", "Some info")
		handlers.PostWarning(ctx, obj, "SomeReason", "Some warning")
		handlers.PostException(ctx, obj, "", "Some exception", errors.New("boom"))
		return nil, nil
	})
	env.StartOperator(t, ns, reg, handlers.Options{})
	create(t, exampleObject(t, ns))
	want := []string{
		"SomeType/SomeReason/Some message",
		"Normal/SomeReason/Some info",
		"Warning/SomeReason/Some warning",
		"Error/Error/Some exception boom",
	}
	eventually(t, "the four Events are posted", func() bool {
		got := eventsAbout(t, ns, "kopf-example-1")
		for _, w := range want {
			if !slices.Contains(got, w) {
				return false
			}
		}
		return true
	})
	for _, e := range eventsAbout(t, ns, "kopf-example-1") {
		if !slices.Contains(want, e) {
			t.Errorf("an Event nobody posted: %s (log lines must not post by default)", e)
		}
	}
}

// With log posting on (down to debug lines), the handlers' lines become
// Events (reason Logging), while the engine's bookkeeping lines (the
// finalizer) do not.
func TestLogLinesAsEvents(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	reg, kind := kex()
	handlers.OnCreate(kind, "create_fn", func(ctx context.Context, obj *unstructured.Unstructured, c *cause.Change) (any, error) {
		return nil, handlers.Permanent(errors.New("nope"))
	})
	handlers.OnDelete(kind, "delete_fn", nothing)
	env.StartOperator(t, ns, reg, handlers.Options{Posting: posting.Settings{Loggers: true, Level: posting.LevelDebug}})
	create(t, exampleObject(t, ns))
	eventually(t, "the outcome lines are posted", func() bool {
		got := eventsAbout(t, ns, "kopf-example-1")
		return slices.Contains(got, "Error/Logging/Handler 'create_fn' failed permanently: nope") &&
			slices.Contains(got, "Normal/Logging/Creation is processed: 0 succeeded; 1 failed.") &&
			slices.Contains(got, "Debug/Logging/Handler 'create_fn' is invoked.")
	})
	for _, e := range eventsAbout(t, ns, "kopf-example-1") {
		if slices.Contains([]string{"Debug/Logging/Adding the finalizer, thus preventing the actual deletion."}, e) {
			t.Errorf("a bookkeeping line was posted: %s", e)
		}
	}
}
