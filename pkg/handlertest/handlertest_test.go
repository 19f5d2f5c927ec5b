package handlertest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/kopf-go/kopf/handlers"
	"github.com/kopf-go/kopf/pkg/handlertest"

	"github.com/kopf-go/kopf/pkg/admission"
	"github.com/kopf-go/kopf/pkg/cause"
)

func example(field string, annotations map[string]string) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
		"metadata": map[string]any{"name": "kex", "namespace": "ns"},
		"spec":     map[string]any{"field": field, "items": []any{"a"}},
		"status":   map[string]any{"create_fn": map[string]any{"message": "hello"}},
	}}
	obj.SetAnnotations(annotations)
	return obj
}

// An update's cause has the essences and the diff the engine computes:
// the framework's annotations and the status are not part of them.
func TestUpdateDiffsTheEssences(t *testing.T) {
	old := example("a", map[string]string{"kopf.zalando.org/last-handled-configuration": "{}", "team": "x"})
	updated := example("b", map[string]string{"kopf.zalando.org/last-handled-configuration": "{...}", "team": "x"})
	c := handlertest.Update(old, updated)
	if c.Reason != cause.Update {
		t.Errorf("Reason = %q, want update", c.Reason)
	}
	if got := c.Diff.String(); got != `(('change', ('spec', 'field'), 'a', 'b'),)` {
		t.Errorf("Diff = %s, want only spec.field changed", got)
	}
	want := map[string]any{"spec": map[string]any{"field": "a", "items": []any{"a"}},
		"metadata": map[string]any{"annotations": map[string]any{"team": "x"}}}
	if diff := cmp.Diff(want, c.Old); diff != "" {
		t.Errorf("Old -want +got:\n%s", diff)
	}
	if c.Body["status"] == nil {
		t.Error("Body lacks the status: it is the whole object")
	}
}

// A create handler's cause has no old state; a field narrows the cause to
// the field's values, as for handlers registered with Field.
func TestCreateAndField(t *testing.T) {
	c := handlertest.Create(example("a", nil), handlertest.ID("create_fn"))
	if c.Old != nil || c.HandlerID != "create_fn" || len(c.Diff) != 1 {
		t.Errorf("create cause: Old %v, id %q, diff %s; want no old state, the id, one addition", c.Old, c.HandlerID, c.Diff)
	}
	f := handlertest.Update(example("a", nil), example("b", nil), handlertest.Field("spec.field"))
	if f.Old != "a" || f.New != "b" || f.Diff.String() != `(('change', (), 'a', 'b'),)` {
		t.Errorf("field cause: %v → %v, %s; want a → b relative to the field", f.Old, f.New, f.Diff)
	}
}

// A handler is called with the built cause and a context that carries a
// fake client; what it writes is in the patch, what it registers as
// sub-handlers is listed.
func TestHandlerWithAFakeClient(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "settings"}, Data: map[string]string{"colour": "blue"}}
	ctx := handlertest.Context(fake.NewClientBuilder().WithObjects(cm).Build())
	handler := func(ctx context.Context, obj *unstructured.Unstructured, c *cause.Change) (any, error) {
		var read corev1.ConfigMap
		if err := handlers.Client(ctx).Get(ctx, client.ObjectKey{Namespace: obj.GetNamespace(), Name: "settings"}, &read); err != nil {
			return nil, err
		}
		c.Patch.Set(read.Data["colour"], "metadata", "labels", "colour")
		c.Patch.SetStatus("seen", true)
		if err := handlers.Subhandler(ctx, "child", func(context.Context, *unstructured.Unstructured, *cause.Change) (any, error) {
			return nil, nil
		}); err != nil {
			return nil, err
		}
		return map[string]any{"colour": read.Data["colour"]}, nil
	}
	obj := example("a", nil)
	c := handlertest.Create(obj)
	result, err := handler(ctx, obj, c)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]any{"colour": "blue"}, result); diff != "" {
		t.Errorf("result -want +got:\n%s", diff)
	}
	want := map[string]any{"metadata": map[string]any{"labels": map[string]any{"colour": "blue"}}, "status": map[string]any{"seen": true}}
	if diff := cmp.Diff(want, handlertest.Patch(c)); diff != "" {
		t.Errorf("patch -want +got:\n%s", diff)
	}
	if diff := cmp.Diff([]string{"child"}, handlertest.Subhandlers(ctx)); diff != "" {
		t.Errorf("sub-handlers -want +got:\n%s", diff)
	}
}

// Typed objects are converted as the engine converts them.
func TestTypedObjects(t *testing.T) {
	c := handlertest.Delete(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}, Data: map[string]string{"k": "v"}})
	if c.Reason != cause.Delete || c.Body["data"].(map[string]any)["k"] != "v" {
		t.Errorf("delete cause: %q, body %v", c.Reason, c.Body)
	}
}

// A daemon runs until the test stops it, sees the stop's reason, and
// reads the latest object the test gives.
func TestDaemonStoppedByTheTest(t *testing.T) {
	obj := example("a", nil)
	d := handlertest.NewDaemon(obj)
	d.Latest(example("b", nil))
	type outcome struct {
		field  string
		reason cause.StopReason
	}
	done := make(chan outcome, 1)
	go func() {
		var field string
		for d.Cause.Sleep(context.Background(), time.Hour) {
		}
		latest, err := d.Cause.Latest(context.Background())
		if err == nil {
			field, _, _ = unstructured.NestedString(latest.(*unstructured.Unstructured).Object, "spec", "field")
		}
		d.Cause.Patch.SetStatus("stopped", true)
		done <- outcome{field, d.Cause.StopReason()}
	}()
	d.Stop(cause.StopResourceDeleted)
	got := <-done
	if got.field != "b" || !errors.Is(got.reason, cause.StopResourceDeleted) {
		t.Errorf("the daemon saw %+v, want the latest field b and RESOURCE_DELETED", got)
	}
	select {
	case <-d.Cause.Stopped():
	default:
		t.Error("Stopped is not closed after Stop")
	}
	if diff := cmp.Diff(map[string]any{"status": map[string]any{"stopped": true}}, d.Patch()); diff != "" {
		t.Errorf("patch -want +got:\n%s", diff)
	}
}

// A webhook handler gets the request of its operation: the body, old and
// new, and the patch that a mutating handler fills.
func TestAdmissionRequests(t *testing.T) {
	validate := func(_ context.Context, obj *unstructured.Unstructured, r *admission.Request) error {
		if field, _, _ := unstructured.NestedString(obj.Object, "spec", "field"); field == "forbidden" {
			return admission.Error{Message: "the field is forbidden"}
		}
		r.Patch.Set("defaulted", "spec", "extra")
		r.Warn("checked")
		return nil
	}
	r := handlertest.Admission(admission.Update, example("a", nil), example("forbidden", nil))
	if err := validate(context.Background(), example("forbidden", nil), r); err == nil {
		t.Error("the forbidden value is admitted")
	}
	if r.Old == nil || r.New == nil || len(r.Diff) != 1 {
		t.Errorf("update request: old %v, new %v, diff %s", r.Old, r.New, r.Diff)
	}
	r = handlertest.Admission(admission.Create, nil, example("a", nil))
	if err := validate(context.Background(), example("a", nil), r); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]any{"spec": map[string]any{"extra": "defaulted"}}, handlertest.AdmissionPatch(r)); diff != "" || len(r.Warnings) != 1 {
		t.Errorf("patch -want +got:\n%s; warnings %q", diff, r.Warnings)
	}
	del := handlertest.Admission(admission.Delete, example("a", nil), nil)
	if del.New != nil || del.Body == nil {
		t.Errorf("delete request: new %v, body %v; want no new object and the old one as the body", del.New, del.Body)
	}
}
