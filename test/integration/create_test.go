package integration

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kopf-go/kopf/handlers"

	"github.com/kopf-go/kopf/pkg/cause"
)

// Kopf's acceptance item 1: a create handler's result lands in status, the
// diffbase is stored as compact JSON, no progress and no finalizer remain.
func TestCreateStoresResultAndDiffBase(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	reg, kind := kex()
	var seen calls
	handlers.OnCreate(kind, "create_fn", func(ctx context.Context, obj *unstructured.Unstructured, c *cause.Change) (any, error) {
		seen.add(c)
		return map[string]any{"message": "hello"}, nil
	})
	op := env.StartOperator(t, ns, reg, handlers.Options{})

	create(t, exampleObject(t, ns))
	eventually(t, "the diffbase is stored", func() bool {
		return get(t, ns, "kopf-example-1").GetAnnotations()["kopf.zalando.org/last-handled-configuration"] != ""
	})
	obj := get(t, ns, "kopf-example-1")

	if n := len(seen.of("create_fn")); n != 1 {
		t.Errorf("create_fn called %d times, want 1", n)
	}
	if msg, _, _ := unstructured.NestedString(obj.Object, "status", "create_fn", "message"); msg != "hello" {
		t.Errorf("status.create_fn.message = %q, want hello", msg)
	}
	want := `{"spec":{"duration":"1m","field":"value","items":["item1","item2"]},"metadata":{"labels":{"somelabel":"somevalue"},"annotations":{"someannotation":"somevalue"}}}` + "\n"
	if got := obj.GetAnnotations()["kopf.zalando.org/last-handled-configuration"]; got != want {
		t.Errorf("diffbase =\n%q\nwant\n%q", got, want)
	}
	for key := range obj.GetAnnotations() {
		if strings.HasPrefix(key, "kopf.zalando.org/") && key != "kopf.zalando.org/last-handled-configuration" {
			t.Errorf("leftover framework annotation %s", key)
		}
	}
	if len(obj.GetFinalizers()) != 0 {
		t.Errorf("finalizers = %v, want none", obj.GetFinalizers())
	}
	if n := op.Logs.Count("Handler 'create_fn' succeeded."); n != 1 {
		t.Errorf("success logged %d times, want 1", n)
	}
	eventually(t, "the summary is logged", func() bool {
		return op.Logs.Count("Creation is processed: 1 succeeded; 0 failed.") == 1
	})
}
