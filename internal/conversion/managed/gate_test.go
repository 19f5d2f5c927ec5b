package managed

import (
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
