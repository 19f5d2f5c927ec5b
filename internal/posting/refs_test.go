package posting

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

var configMapRef = Ref{GVK: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, Namespace: "ns2", Name: "cm", UID: "uid2"}

func configMap() *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns2", Name: "cm", UID: "uid2"}}
}

// notRegistered is a typed object that no scheme knows.
type notRegistered struct {
	metav1.TypeMeta
	metav1.ObjectMeta
}

func (n *notRegistered) DeepCopyObject() runtime.Object { c := *n; return &c }

func TestRefs(t *testing.T) {
	withKind := configMap()
	withKind.SetGroupVersionKind(schema.GroupVersionKind{Group: "custom.io", Version: "v9", Kind: "Renamed"})
	ulist := &unstructured.UnstructuredList{}
	ulist.Items = []unstructured.Unstructured{*example(), *example()}
	ulist.Items[1].SetName("name2")
	second := exampleRef
	second.Name = "name2"

	tests := []struct {
		name string
		objs runtime.Object
		want []Ref
	}{
		{"unstructured", example(), []Ref{exampleRef}},
		{"typed with an empty TypeMeta: from the scheme", configMap(), []Ref{configMapRef}},
		{"typed with a TypeMeta: as set", withKind, []Ref{{GVK: withKind.GroupVersionKind(), Namespace: "ns2", Name: "cm", UID: "uid2"}}},
		{"cluster-scoped", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns9", UID: "uid9"}},
			[]Ref{{GVK: schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, Name: "ns9", UID: "uid9"}}},
		{"typed list", &corev1.ConfigMapList{Items: []corev1.ConfigMap{*configMap(), *configMap()}}, []Ref{configMapRef, configMapRef}},
		{"unstructured list", ulist, []Ref{exampleRef, second}},
		{"objects", Objects{example(), configMap()}, []Ref{exampleRef, configMapRef}},
		{"no objects", Objects{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &Poster{}
			got, err := p.Refs(tt.objs)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Refs() -want +got:\n%s", diff)
			}
		})
	}
}

func TestRefsErrors(t *testing.T) {
	var nilMap *corev1.ConfigMap
	tests := []struct {
		name    string
		objs    runtime.Object
		want    []Ref
		errText string
	}{
		{"nil", nil, nil, "neither an object nor a list"},
		{"typed nil", nilMap, nil, "no object"},
		{"not an object", &metav1.Status{}, nil, "neither an object nor a list"},
		{"unknown type", &notRegistered{}, nil, "find the kind of *posting.notRegistered"},
		{"unstructured without a kind", &unstructured.Unstructured{Object: map[string]any{}}, nil, "find the kind"},
		{"the good ones stay", Objects{example(), nil, &notRegistered{}, configMap()}, []Ref{exampleRef, configMapRef}, "no object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := (&Poster{}).Refs(tt.objs)
			if err == nil || !strings.Contains(err.Error(), tt.errText) {
				t.Errorf("Refs() error = %v, want one with %q", err, tt.errText)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Refs() -want +got:\n%s", diff)
			}
		})
	}
}

// TestScheme: the poster's scheme, else the client's, names typed kinds.
func TestScheme(t *testing.T) {
	own := runtime.NewScheme()
	own.AddKnownTypeWithName(schema.GroupVersionKind{Group: "own.io", Version: "v1", Kind: "Thing"}, &notRegistered{})
	clientScheme := runtime.NewScheme()
	clientScheme.AddKnownTypeWithName(schema.GroupVersionKind{Group: "client.io", Version: "v2", Kind: "Thing"}, &notRegistered{})
	c := fake.NewClientBuilder().WithScheme(clientScheme).Build()
	for _, tt := range []struct {
		poster *Poster
		want   string
	}{
		{&Poster{Scheme: own, Client: c}, "own.io/v1"},
		{&Poster{Client: c}, "client.io/v2"},
	} {
		refs, err := tt.poster.Refs(client.Object(&notRegistered{}))
		if err != nil {
			t.Fatal(err)
		}
		if got := refs[0].GVK.GroupVersion().String(); got != tt.want {
			t.Errorf("the kind came from %s, want %s", got, tt.want)
		}
	}
}
