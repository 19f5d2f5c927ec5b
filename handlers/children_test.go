package handlers

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kopf-go/kopf/pkg/cause"
	"github.com/kopf-go/kopf/pkg/filter"
)

// Children of one kind declared twice are one kind of children; their
// handlers' ids must differ, a value filter needs a field, and the field
// joins the id.
func TestChildrenRegistration(t *testing.T) {
	noopChild := func(context.Context, *unstructured.Unstructured, *corev1.ConfigMap, *cause.Child) error { return nil }
	reg := NewRegistry()
	kex := ForKind(reg, "kopf.dev", "v1", "KopfExample")
	first, again := Children[*corev1.ConfigMap](kex), Children[*corev1.ConfigMap](kex)
	if first.kind != again.kind {
		t.Error("Children of the same type twice made two kinds of children")
	}
	OnChild(first, "restore", noopChild)
	OnChild(again, "restore", noopChild)
	OnChild(first, "valued", noopChild, Value(filter.Equals("x")))
	OnChild(first, "watch", noopChild, Field("data.field"), Retries(3))
	if id := first.kind.Handlers[3].ID; id != "watch/data.field" {
		t.Errorf("the field's handler has the id %q, want watch/data.field", id)
	}
	err := reg.reg.Validate()
	for _, want := range []string{`child handler id "restore" is registered twice`, `child handler "valued": a value filter needs a field`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want it to say %q", err, want)
		}
	}
	Children[*unstructured.Unstructured](kex)
	if err := reg.reg.Validate(); err == nil || !strings.Contains(err.Error(), "use handlers.ChildrenKind") {
		t.Errorf("Validate() = %v, want it to refuse unstructured children without a kind", err)
	}
}
