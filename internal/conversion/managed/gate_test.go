package managed

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsfake "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/fake"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kopf-go/kopf/internal/conversion"
)

func TestOtherVersion(t *testing.T) {
	crd := func(versions ...apiextensionsv1.CustomResourceDefinitionVersion) *apiextensionsv1.CustomResourceDefinition {
		return &apiextensionsv1.CustomResourceDefinition{Spec: apiextensionsv1.CustomResourceDefinitionSpec{Versions: versions}}
	}
	v := func(name string, served, storage bool) apiextensionsv1.CustomResourceDefinitionVersion {
		return apiextensionsv1.CustomResourceDefinitionVersion{Name: name, Served: served, Storage: storage}
	}
	tests := []struct {
		name    string
		crd     *apiextensionsv1.CustomResourceDefinition
		watched string
		want    string
	}{
		{"the watched version, not stored", crd(v("v1", true, false), v("v2", true, true)), "v1", "v1"},
		{"the stored one watched: another served", crd(v("v1", true, false), v("v2", true, true)), "v2", "v1"},
		{"not served versions do not count", crd(v("v1", false, false), v("v2", true, true)), "v2", ""},
		{"one version", crd(v("v1", true, true)), "v1", ""},
	}
	for _, tt := range tests {
		if got := otherVersion(tt.crd, tt.watched); got != tt.want {
			t.Errorf("%s: otherVersion() = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestLastWrite(t *testing.T) {
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	later := created.Add(time.Hour)
	crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{
		CreationTimestamp: metav1.NewTime(created),
		ManagedFields: []metav1.ManagedFieldsEntry{
			{Manager: "kubectl", Time: &metav1.Time{Time: created.Add(time.Minute)}},
			{Manager: FieldManager, Time: &metav1.Time{Time: later}},
			{Manager: "no time"},
		},
	}}
	if got := lastWrite(crd); !got.Equal(later) {
		t.Errorf("lastWrite() = %s, want %s", got, later)
	}
}

// The gate waits while the CRD's conversion is not the webhook, and for a
// moment after its last write, unless a list went through the webhook
// meanwhile; a conversion in place for longer passes at once.
func TestGateInEffect(t *testing.T) {
	now := time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)
	gvk := schema.GroupVersionKind{Group: "kopf.dev", Version: "v1", Kind: "ConversionExample"}
	gvr := schema.GroupVersionResource{Group: "kopf.dev", Version: "v1", Resource: "conversionexamples"}
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(gvk, meta.RESTScopeNamespace)
	newCRD := func(strategy apiextensionsv1.ConversionStrategyType, written time.Time) *apiextensionsv1.CustomResourceDefinition {
		return &apiextensionsv1.CustomResourceDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: "conversionexamples.kopf.dev", CreationTimestamp: metav1.NewTime(written)},
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{
				Conversion: &apiextensionsv1.CustomResourceConversion{Strategy: strategy},
				Versions:   []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true}, {Name: "v2", Served: true, Storage: true}},
			},
		}
	}
	object := &unstructured.Unstructured{}
	object.SetGroupVersionKind(gvk)
	object.SetNamespace("ns")
	object.SetName("obj")
	tests := []struct {
		name     string
		crd      *apiextensionsv1.CustomResourceDefinition
		converts bool // the list goes through the webhook
		want     bool
	}{
		{"no conversion yet", newCRD(apiextensionsv1.NoneConverter, now.Add(-time.Hour)), true, false},
		{"the webhook, long in place", newCRD(apiextensionsv1.WebhookConverter, now.Add(-time.Hour)), false, true},
		{"the webhook, just written", newCRD(apiextensionsv1.WebhookConverter, now.Add(-time.Second)), false, false},
		{"just written, and a list went through it", newCRD(apiextensionsv1.WebhookConverter, now.Add(-time.Second)), true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			served := &conversion.Served{}
			scheme := runtime.NewScheme()
			dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(scheme, map[schema.GroupVersionResource]string{gvr: "ConversionExampleList"}, object.DeepCopy())
			dyn.PrependReactor("list", "conversionexamples", func(clienttesting.Action) (bool, runtime.Object, error) {
				if tt.converts {
					served.Add(gvk.GroupKind())
				}
				return false, nil, nil
			})
			g := &Gate{CRDs: apiextensionsfake.NewSimpleClientset(tt.crd), Dynamic: dyn, Mapper: mapper, Served: served,
				Kinds: []schema.GroupKind{gvk.GroupKind()}, Clock: clocktesting.NewFakeClock(now), Logger: logr.Discard()}
			got, why, err := g.inEffect(context.Background(), gvk)
			if err != nil {
				t.Fatalf("inEffect() error = %v", err)
			}
			if got != tt.want {
				t.Errorf("inEffect() = %v (%s), want %v", got, why, tt.want)
			}
		})
	}
}
