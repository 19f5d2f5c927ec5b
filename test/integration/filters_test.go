package integration

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kopf-go/kopf/handlers"

	"github.com/kopf-go/kopf/pkg/cause"
	"github.com/kopf-go/kopf/pkg/filter"
)

// Filters decide which handlers run; an object that matches no change
// handler gets no state at all, and when it starts to match, it is new.
func TestFiltersAndStealthMode(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	reg, kind := kex()
	var seen calls
	handlers.OnCreate(kind, "label_value", seen.record, handlers.Labels{"somelabel": filter.Equals("somevalue")})
	handlers.OnCreate(kind, "label_present", seen.record, handlers.Labels{"somelabel": filter.Present})
	handlers.OnCreate(kind, "label_absent", seen.record, handlers.Labels{"somelabel": filter.Absent})
	handlers.OnCreate(kind, "label_check", seen.record, handlers.Labels{"somelabel": filter.Check(func(v any) bool { return v == "somevalue" })})
	handlers.OnCreate(kind, "annotation_value", seen.record, handlers.Annotations{"someannotation": filter.Equals("somevalue")})
	handlers.OnCreate(kind, "annotation_mismatch", seen.record, handlers.Annotations{"someannotation": filter.Equals("other")})
	handlers.OnCreate(kind, "when_true", seen.record, handlers.When(func(obj *unstructured.Unstructured, c *cause.Change) bool { return obj.GetName() == "kopf-example-1" }))
	handlers.OnCreate(kind, "when_false", seen.record, handlers.When(func(obj *unstructured.Unstructured, c *cause.Change) bool { return false }))
	handlers.OnCreate(kind, "field_value", seen.record, handlers.Field("spec.field"), handlers.Value(filter.Equals("value")))
	handlers.OnCreate(kind, "field_other", seen.record, handlers.Field("spec.field"), handlers.Value(filter.Equals("other")))
	handlers.OnCreate(kind, "field_present", seen.record, handlers.Field("spec.items"))
	handlers.OnCreate(kind, "field_absent", seen.record, handlers.Field("spec.nothing"))
	handlers.OnUpdate(kind, "update_old_new", seen.record, handlers.Field("spec.field"), handlers.ValueBefore(filter.Equals("value")), handlers.ValueAfter(filter.Equals("changed")))
	handlers.OnUpdate(kind, "update_added", seen.record, handlers.Field("spec.extra"), handlers.ValueBefore(filter.Absent), handlers.ValueAfter(filter.Present))
	// The stealth object: only labelled objects matter to this handler.
	stealthReg, stealthKind := kex()
	handlers.OnCreate(stealthKind, "picky", seen.record, handlers.Labels{"picked": filter.Equals("yes")})
	handlers.OnDelete(stealthKind, "picky_delete", seen.record, handlers.Labels{"picked": filter.Equals("yes")})

	op := env.StartOperator(t, ns, reg, handlers.Options{})
	create(t, exampleObject(t, ns))
	eventually(t, "creation is handled", func() bool { return len(op.Logs.Messages("Creation is processed:")) == 1 })
	var ran []string
	for _, c := range seen.all() {
		ran = append(ran, c.ID)
	}
	want := []string{"label_value", "label_present", "label_check", "annotation_value", "when_true", "field_value/spec.field", "field_present/spec.items"}
	if !slices.Equal(ran, want) {
		t.Errorf("ran %v, want %v", ran, want)
	}

	mergePatch(t, ns, "kopf-example-1", `{"spec":{"field":"changed"}}`, false)
	eventually(t, "the old/new update runs", func() bool { return len(seen.of("update_old_new/spec.field")) == 1 })
	mergePatch(t, ns, "kopf-example-1", `{"spec":{"field":"other","extra":1}}`, false)
	eventually(t, "the addition runs", func() bool { return len(seen.of("update_added/spec.extra")) == 1 })
	if n := len(seen.of("update_old_new/spec.field")); n != 1 {
		t.Errorf("update_old_new ran %d times, want 1 (not for changed -> other)", n)
	}
	op.Stop(t)

	// Stealth: the same object kind, a handler that needs a label.
	stealthNS := env.Namespace(t)
	picky := env.StartOperator(t, stealthNS, stealthReg, handlers.Options{})
	create(t, exampleObject(t, stealthNS))
	mergePatch(t, stealthNS, "kopf-example-1", `{"spec":{"field":"changed"}}`, false)
	mergePatch(t, stealthNS, "kopf-example-1", `{"metadata":{"labels":{"picked":"yes"}}}`, false)
	eventually(t, "the object is handled once it matches", func() bool { return len(seen.of("picky")) == 1 })
	if c := seen.of("picky")[0]; c.Reason != cause.Create {
		t.Errorf("the newly matching object got reason %s, want create", c.Reason)
	}
	mergePatch(t, stealthNS, "kopf-example-1", `{"metadata":{"labels":{"picked":null}}}`, false)
	eventually(t, "the finalizer goes when nothing needs it", func() bool {
		return len(get(t, stealthNS, "kopf-example-1").GetFinalizers()) == 0
	})
	if len(picky.Logs.Messages("Removing the finalizer, as there are no handlers requiring it.")) != 1 {
		t.Error("the finalizer removal was not logged")
	}
}

// Before the object matches, it carries nothing of the engine's.
func TestStealthObjectStaysUntouched(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	seenVersions := recordVersions(t, ns)
	reg, kind := kex()
	var seen calls
	handlers.OnCreate(kind, "picky", seen.record, handlers.Labels{"picked": filter.Equals("yes")})
	op := env.StartOperator(t, ns, reg, handlers.Options{})
	create(t, exampleObject(t, ns))
	mergePatch(t, ns, "kopf-example-1", `{"spec":{"field":"changed"}}`, false)
	mergePatch(t, ns, "kopf-example-1", `{"metadata":{"labels":{"other":"x"}}}`, false)
	// A matching sibling is the barrier: once it is handled, the engine has
	// seen the changes above.
	sibling := exampleObject(t, ns)
	sibling.SetName("sibling")
	sibling.SetLabels(map[string]string{"picked": "yes"})
	create(t, sibling)
	eventually(t, "the sibling is handled", func() bool { return len(seen.of("picky")) == 1 })
	for _, v := range seenVersions.all() {
		if v.GetName() != "kopf-example-1" {
			continue
		}
		if len(v.GetFinalizers()) > 0 || len(v.GetAnnotations()) != 1 {
			t.Errorf("the unmatched object got finalizers %v, annotations %v", v.GetFinalizers(), v.GetAnnotations())
		}
	}
	if len(op.Logs.About("sibling")) == 0 {
		t.Error("no log lines about the handled sibling; the check below would prove nothing")
	}
	if lines := op.Logs.About("kopf-example-1"); len(lines) != 0 {
		t.Errorf("the unmatched object was logged about: %q", lines)
	}
}
