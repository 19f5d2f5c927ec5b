package handlers

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kopf-go/kopf/pkg/cause"
)

// One kind registered twice, typed and by name, would
// get two controllers that both handle every object: setup refuses it,
// naming both registrations.
func TestSetupRefusesOneKindRegisteredTwice(t *testing.T) {
	noopChange := func(context.Context, *unstructured.Unstructured, *cause.Change) (any, error) { return nil, nil }
	tests := []struct {
		name  string
		setup func(reg *Registry) error
	}{
		{"SetupWithManager", func(reg *Registry) error { return SetupWithManager(newManager(t), reg, Options{}) }},
		{"SetupWebhooksWithManager", func(reg *Registry) error {
			return SetupWebhooksWithManager(newManager(t), reg, WebhookOptions{})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := NewRegistry()
			OnCreate(For[*corev1.ConfigMap](reg), "typed", func(context.Context, *corev1.ConfigMap, *cause.Change) (any, error) { return nil, nil })
			OnCreate(ForKind(reg, "", "v1", "ConfigMap"), "by_name", noopChange)
			OnValidate(ForKind(reg, "", "v1", "ConfigMap"), "v", noop[*unstructured.Unstructured])
			err := tt.setup(reg)
			if err == nil {
				t.Fatal("setup = nil, want the kind registered twice")
			}
			want := `kind ConfigMap is registered twice, as handlers.For[*v1.ConfigMap] and as handlers.ForKind("", "v1", "ConfigMap")`
			if !strings.Contains(err.Error(), want) {
				t.Errorf("the error does not say %q:\n%v", want, err)
			}
		})
	}
}

// One kind by name at two versions is one set of objects (the API server
// serves each object at every version): refused as well.
func TestSetupRefusesOneKindAtTwoVersions(t *testing.T) {
	noopChange := func(context.Context, *unstructured.Unstructured, *cause.Change) (any, error) { return nil, nil }
	reg := NewRegistry()
	OnCreate(ForKind(reg, "kopf.dev", "v1", "KopfExample"), "v1_fn", noopChange)
	OnCreate(ForKind(reg, "kopf.dev", "v1beta1", "KopfExample"), "v1beta1_fn", noopChange)
	err := SetupWithManager(newManager(t), reg, Options{})
	want := `kind KopfExample.kopf.dev is registered twice, as handlers.ForKind("kopf.dev", "v1", "KopfExample") and as handlers.ForKind("kopf.dev", "v1beta1", "KopfExample")`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("SetupWithManager() = %v, want an error saying %q", err, want)
	}
}

// The same resource registered again, typed or by name, is the same
// resource: its handlers join it.
func TestResourcesRegisteredAgainAreTheSame(t *testing.T) {
	reg := NewRegistry()
	if For[*corev1.ConfigMap](reg).res != For[*corev1.ConfigMap](reg).res {
		t.Error("For twice gave two resources")
	}
	if ForKind(reg, "kopf.dev", "v1", "KopfExample").res != ForKind(reg, "kopf.dev", "v1", "KopfExample").res {
		t.Error("ForKind twice gave two resources")
	}
	if len(reg.reg.Kinds) != 2 {
		t.Errorf("kinds = %d, want 2", len(reg.reg.Kinds))
	}
	if err := reg.checkResources(newManager(t).GetScheme()); err != nil {
		t.Errorf("checkResources() = %v, want nil", err)
	}
}
