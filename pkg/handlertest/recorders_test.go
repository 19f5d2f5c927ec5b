package handlertest_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/kopf-go/kopf/handlers"
	"github.com/kopf-go/kopf/pkg/cause"
	"github.com/kopf-go/kopf/pkg/filter"
	"github.com/kopf-go/kopf/pkg/handlertest"
	"github.com/kopf-go/kopf/pkg/indexing"
)

func TestEventsAreRecorded(t *testing.T) {
	events := &handlertest.Events{}
	ctx := handlertest.Context(nil, handlertest.RecordEvents(events))
	obj := example("x", nil)
	obj.SetUID("uid-1")
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid-2"}}

	handlers.PostInfo(ctx, obj, "Created", "made it")
	handlers.PostWarning(ctx, handlers.Objects{obj, pod}, "Linked", "both")
	handlers.PostException(ctx, pod, "", "failed:", errors.New("boom"))

	want := []handlertest.Event{
		{Type: "Normal", Reason: "Created", Message: "made it", APIVersion: "kopf.dev/v1", Kind: "KopfExample", Namespace: "ns", Name: "kex", UID: "uid-1"},
		{Type: "Warning", Reason: "Linked", Message: "both", APIVersion: "kopf.dev/v1", Kind: "KopfExample", Namespace: "ns", Name: "kex", UID: "uid-1"},
		// A typed object's kind comes from client-go's scheme.
		{Type: "Warning", Reason: "Linked", Message: "both", APIVersion: "v1", Kind: "Pod", Namespace: "ns", Name: "p", UID: "uid-2"},
		{Type: "Error", Reason: "Error", Message: "failed: boom", APIVersion: "v1", Kind: "Pod", Namespace: "ns", Name: "p", UID: "uid-2"},
	}
	if diff := cmp.Diff(want, events.Posted()); diff != "" {
		t.Errorf("recorded events (-want +got):\n%s", diff)
	}
}

// Without RecordEvents, a Context has no poster: posting is a logged
// no-op, as outside handlers, and nothing else is recorded.
func TestEventsNeedRecording(t *testing.T) {
	events := &handlertest.Events{}
	handlers.PostInfo(handlertest.Context(nil), example("x", nil), "Created", "lost")
	if got := events.Posted(); len(got) != 0 {
		t.Errorf("an unused recorder recorded %v", got)
	}
}

func TestContextGivesTheClientAsTheAPIReader(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}
	c := fake.NewClientBuilder().WithObjects(pod).Build()
	ctx := handlertest.Context(c)
	got := &corev1.Pod{}
	if err := handlers.APIReader(ctx).Get(ctx, client.ObjectKeyFromObject(pod), got); err != nil {
		t.Fatalf("read through the API reader: %v", err)
	}
	if got.Name != "p" {
		t.Errorf("read %q, want p", got.Name)
	}
	if handlers.APIReader(handlertest.Context(nil)) != nil {
		t.Error("a Context without a client has an API reader")
	}
}

func pod(name, node string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name), Labels: labels},
		Spec: corev1.PodSpec{NodeName: node}}
}

func TestIndexRunsTheIndexHandlers(t *testing.T) {
	reg := handlers.NewRegistry()
	pods := handlers.For[*corev1.Pod](reg)
	handlers.Index(pods, "by_node", func(_ context.Context, p *corev1.Pod, _ *cause.Change) (any, error) {
		return map[any]any{p.Spec.NodeName: p.Name}, nil
	})
	handlers.Index(pods, "apps", func(_ context.Context, p *corev1.Pod, _ *cause.Change) (any, error) {
		return p.Labels["app"], nil // stored under the key nil
	}, handlers.Labels{"app": filter.Present})

	indices := &indexing.Indices{}
	err := handlertest.Index(indices, pods, pod("a", "n1", map[string]string{"app": "web"}), pod("b", "n1", nil), pod("c", "n2", nil))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := indices.Get("by_node").Get("n1"), []any{"a", "b"}; !sameItems(got, want) {
		t.Errorf("by_node[n1] = %v, want %v", got, want)
	}
	if got, want := indices.Get("by_node").Get("n2"), []any{"c"}; !sameItems(got, want) {
		t.Errorf("by_node[n2] = %v, want %v", got, want)
	}
	// The label filter kept b and c out.
	if got, want := indices.Get("apps").Get(nil), []any{"web"}; !sameItems(got, want) {
		t.Errorf("apps[nil] = %v, want %v", got, want)
	}

	// A handler sees the indices through its cause.
	c := handlertest.Create(example("x", nil), handlertest.Indices(indices))
	if c.Indices.Get("by_node").Len() != 2 {
		t.Errorf("the cause's index has %d keys, want 2", c.Indices.Get("by_node").Len())
	}
}

func TestIndexReportsFailuresAndLeavesTheObjectOut(t *testing.T) {
	reg := handlers.NewRegistry()
	kex := handlers.ForKind(reg, "kopf.dev", "v1", "KopfExample")
	handlers.Index(kex, "fields", func(_ context.Context, obj *unstructured.Unstructured, _ *cause.Change) (any, error) {
		field, _, _ := unstructured.NestedString(obj.Object, "spec", "field")
		switch field {
		case "wrong":
			return nil, handlers.Permanent(errors.New("no such field"))
		case "panic":
			panic("indexer bug")
		}
		return map[any]any{field: obj.GetName()}, nil
	})
	good, wrong, panicking := example("ok", nil), example("wrong", nil), example("panic", nil)
	wrong.SetName("wrong")
	panicking.SetName("panicking")

	indices := &indexing.Indices{}
	err := handlertest.Index(indices, kex, good, wrong, panicking)
	if err == nil {
		t.Fatal("no error for a failing and a panicking index handler")
	}
	for _, want := range []string{`index handler "fields" on ns/wrong: no such field`, `index handler "fields" on ns/panicking: it panicked: panic: indexer bug`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error %q does not say %q", err, want)
		}
	}
	if keys := indices.Get("fields").Keys(); len(keys) != 1 || keys[0] != "ok" {
		t.Errorf("the index holds %v, want only the good object's key", keys)
	}
}

func TestIndexRefusesAResourceItDoesNotKnow(t *testing.T) {
	if err := handlertest.Index[*corev1.Pod](&indexing.Indices{}, &handlers.Resource[*corev1.Pod]{}); err == nil {
		t.Error("a resource made by hand was accepted")
	}
}

func sameItems(got, want []any) bool {
	if len(got) != len(want) {
		return false
	}
	seen := map[any]int{}
	for _, v := range got {
		seen[v]++
	}
	for _, v := range want {
		seen[v]--
	}
	for _, n := range seen {
		if n != 0 {
			return false
		}
	}
	return true
}
