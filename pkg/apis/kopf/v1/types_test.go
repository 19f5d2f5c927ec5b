package v1

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
)

var (
	_ runtime.Object = &KopfPeering{}
	_ runtime.Object = &KopfPeeringList{}
	_ runtime.Object = &ClusterKopfPeering{}
	_ runtime.Object = &ClusterKopfPeeringList{}
)

func intp(i int) *int { return &i }

// TestWireNames pins the names Kopf's CRDs use.
func TestWireNames(t *testing.T) {
	got := []string{GroupVersion.String(), KopfPeeringResource, ClusterKopfPeeringResource}
	want := []string{"kopf.dev/v1", "kopfpeerings", "clusterkopfpeerings"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("wire names mismatch (-want +got):\n%s", diff)
	}
}

// meta is a fully populated ObjectMeta, built anew at every call.
func meta() metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name: "default", Namespace: "ns", ResourceVersion: "42",
		Labels:          map[string]string{"app": "kopf"},
		Annotations:     map[string]string{"note": "x"},
		Finalizers:      []string{"f"},
		OwnerReferences: []metav1.OwnerReference{{Name: "owner", Controller: new(bool)}},
	}
}

// status is a populated status, built anew at every call.
func status() map[string]*Peer {
	return map[string]*Peer{
		"kopf-pod-1": {Priority: 100, Lifetime: intp(60), LastSeen: "2020-12-31T23:59:59.123456+00:00"},
		"dev@laptop": {Priority: 666, Lifetime: intp(3600), LastSeen: "2020-12-31T23:59:59.123456+00:00", Message: "debugging"},
		"no-life":    {Priority: 1},
		"gone":       nil,
	}
}

// mutate changes everything reachable through an object's pointers, maps
// and slices.
func mutate(m *metav1.ObjectMeta, s map[string]*Peer) {
	m.Labels["app"] = "changed"
	m.Annotations["new"] = "y"
	m.Finalizers[0] = "changed"
	*m.OwnerReferences[0].Controller = true
	m.OwnerReferences[0].Name = "changed"
	*s["kopf-pod-1"].Lifetime = 1
	s["kopf-pod-1"].Priority = -1
	s["dev@laptop"].Message = "changed"
	s["added"] = &Peer{Priority: 7}
	delete(s, "no-life")
}

func TestPeerDeepCopy(t *testing.T) {
	if got := (*Peer)(nil).DeepCopy(); got != nil {
		t.Errorf("nil DeepCopy() = %v, want nil", got)
	}
	for _, orig := range []*Peer{
		{},
		{Priority: 100, Lifetime: intp(60), LastSeen: "2020-12-31T23:59:59.123456+00:00", Message: "m"},
	} {
		c := orig.DeepCopy()
		if diff := cmp.Diff(orig, c); diff != "" {
			t.Errorf("DeepCopy() mismatch (-want +got):\n%s", diff)
		}
		if c == orig || (orig.Lifetime != nil && c.Lifetime == orig.Lifetime) {
			t.Errorf("DeepCopy() shares memory with the original")
		}
	}
}

func TestKopfPeeringDeepCopy(t *testing.T) {
	orig := &KopfPeering{TypeMeta: metav1.TypeMeta{APIVersion: "kopf.dev/v1", Kind: "KopfPeering"}, ObjectMeta: meta(), Status: status()}
	want := &KopfPeering{TypeMeta: metav1.TypeMeta{APIVersion: "kopf.dev/v1", Kind: "KopfPeering"}, ObjectMeta: meta(), Status: status()}
	for name, copyOf := range map[string]func(*KopfPeering) *KopfPeering{
		"DeepCopy":       (*KopfPeering).DeepCopy,
		"DeepCopyObject": func(p *KopfPeering) *KopfPeering { return p.DeepCopyObject().(*KopfPeering) },
	} {
		t.Run(name, func(t *testing.T) {
			c := copyOf(orig)
			if diff := cmp.Diff(want, c); diff != "" {
				t.Fatalf("copy mismatch (-want +got):\n%s", diff)
			}
			mutate(&c.ObjectMeta, c.Status)
			c.Name = "changed"
			if diff := cmp.Diff(want, orig); diff != "" {
				t.Errorf("changing the copy changed the original (-want +got):\n%s", diff)
			}
		})
	}
}

func TestClusterKopfPeeringDeepCopy(t *testing.T) {
	orig := &ClusterKopfPeering{TypeMeta: metav1.TypeMeta{APIVersion: "kopf.dev/v1", Kind: "ClusterKopfPeering"}, ObjectMeta: meta(), Status: status()}
	want := &ClusterKopfPeering{TypeMeta: metav1.TypeMeta{APIVersion: "kopf.dev/v1", Kind: "ClusterKopfPeering"}, ObjectMeta: meta(), Status: status()}
	for name, copyOf := range map[string]func(*ClusterKopfPeering) *ClusterKopfPeering{
		"DeepCopy":       (*ClusterKopfPeering).DeepCopy,
		"DeepCopyObject": func(p *ClusterKopfPeering) *ClusterKopfPeering { return p.DeepCopyObject().(*ClusterKopfPeering) },
	} {
		t.Run(name, func(t *testing.T) {
			c := copyOf(orig)
			if diff := cmp.Diff(want, c); diff != "" {
				t.Fatalf("copy mismatch (-want +got):\n%s", diff)
			}
			mutate(&c.ObjectMeta, c.Status)
			c.Name = "changed"
			if diff := cmp.Diff(want, orig); diff != "" {
				t.Errorf("changing the copy changed the original (-want +got):\n%s", diff)
			}
		})
	}
}

func TestKopfPeeringListDeepCopy(t *testing.T) {
	build := func() *KopfPeeringList {
		return &KopfPeeringList{
			TypeMeta: metav1.TypeMeta{APIVersion: "kopf.dev/v1", Kind: "KopfPeeringList"},
			ListMeta: metav1.ListMeta{ResourceVersion: "7", Continue: "c", RemainingItemCount: new(int64)},
			Items:    []KopfPeering{{ObjectMeta: meta(), Status: status()}, {ObjectMeta: meta()}},
		}
	}
	orig, want := build(), build()
	c := orig.DeepCopyObject().(*KopfPeeringList)
	if diff := cmp.Diff(want, c); diff != "" {
		t.Fatalf("copy mismatch (-want +got):\n%s", diff)
	}
	mutate(&c.Items[0].ObjectMeta, c.Items[0].Status)
	*c.RemainingItemCount = 5
	c.Items[1].Name = "changed"
	c.Items = append(c.Items[:1], KopfPeering{})
	if diff := cmp.Diff(want, orig); diff != "" {
		t.Errorf("changing the copy changed the original (-want +got):\n%s", diff)
	}
}

func TestClusterKopfPeeringListDeepCopy(t *testing.T) {
	build := func() *ClusterKopfPeeringList {
		return &ClusterKopfPeeringList{
			TypeMeta: metav1.TypeMeta{APIVersion: "kopf.dev/v1", Kind: "ClusterKopfPeeringList"},
			ListMeta: metav1.ListMeta{ResourceVersion: "7", Continue: "c", RemainingItemCount: new(int64)},
			Items:    []ClusterKopfPeering{{ObjectMeta: meta(), Status: status()}, {ObjectMeta: meta()}},
		}
	}
	orig, want := build(), build()
	c := orig.DeepCopyObject().(*ClusterKopfPeeringList)
	if diff := cmp.Diff(want, c); diff != "" {
		t.Fatalf("copy mismatch (-want +got):\n%s", diff)
	}
	mutate(&c.Items[0].ObjectMeta, c.Items[0].Status)
	*c.RemainingItemCount = 5
	c.Items[1].Name = "changed"
	c.Items = append(c.Items[:1], ClusterKopfPeering{})
	if diff := cmp.Diff(want, orig); diff != "" {
		t.Errorf("changing the copy changed the original (-want +got):\n%s", diff)
	}
}

// TestDeepCopyEmpties checks that copies keep nil and empty apart, as
// generated deep copies do.
func TestDeepCopyEmpties(t *testing.T) {
	tests := []struct {
		name string
		obj  runtime.Object
	}{
		{"KopfPeering without status", &KopfPeering{}},
		{"KopfPeering with an empty status", &KopfPeering{Status: map[string]*Peer{}}},
		{"ClusterKopfPeering without status", &ClusterKopfPeering{}},
		{"ClusterKopfPeering with an empty status", &ClusterKopfPeering{Status: map[string]*Peer{}}},
		{"KopfPeeringList without items", &KopfPeeringList{}},
		{"KopfPeeringList with no items", &KopfPeeringList{Items: []KopfPeering{}}},
		{"ClusterKopfPeeringList without items", &ClusterKopfPeeringList{}},
		{"ClusterKopfPeeringList with no items", &ClusterKopfPeeringList{Items: []ClusterKopfPeering{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.obj, tt.obj.DeepCopyObject()); diff != "" {
				t.Errorf("DeepCopyObject() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDeepCopyNil checks that nil objects copy to a nil interface, as
// generated DeepCopyObject methods do.
func TestDeepCopyNil(t *testing.T) {
	if got := (*KopfPeering)(nil).DeepCopy(); got != nil {
		t.Errorf("(*KopfPeering)(nil).DeepCopy() = %v, want nil", got)
	}
	if got := (*ClusterKopfPeering)(nil).DeepCopy(); got != nil {
		t.Errorf("(*ClusterKopfPeering)(nil).DeepCopy() = %v, want nil", got)
	}
	for name, obj := range map[string]runtime.Object{
		"KopfPeering":            (*KopfPeering)(nil),
		"KopfPeeringList":        (*KopfPeeringList)(nil),
		"ClusterKopfPeering":     (*ClusterKopfPeering)(nil),
		"ClusterKopfPeeringList": (*ClusterKopfPeeringList)(nil),
	} {
		if got := obj.DeepCopyObject(); got != nil {
			t.Errorf("(*%s)(nil).DeepCopyObject() = %#v, want a nil interface", name, got)
		}
	}
}

func TestAddToScheme(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := AddToScheme(scheme); err != nil {
		t.Fatalf("AddToScheme() error: %v", err)
	}
	tests := []struct {
		obj  runtime.Object
		kind string
	}{
		{&KopfPeering{}, "KopfPeering"},
		{&KopfPeeringList{}, "KopfPeeringList"},
		{&ClusterKopfPeering{}, "ClusterKopfPeering"},
		{&ClusterKopfPeeringList{}, "ClusterKopfPeeringList"},
	}
	for _, tt := range tests {
		t.Run(tt.kind, func(t *testing.T) {
			gvks, _, err := scheme.ObjectKinds(tt.obj)
			if err != nil {
				t.Fatalf("ObjectKinds() error: %v", err)
			}
			want := []schema.GroupVersionKind{{Group: "kopf.dev", Version: "v1", Kind: tt.kind}}
			if diff := cmp.Diff(want, gvks); diff != "" {
				t.Errorf("ObjectKinds() mismatch (-want +got):\n%s", diff)
			}
			obj, err := scheme.New(want[0])
			if err != nil {
				t.Fatalf("New(%v) error: %v", want[0], err)
			}
			if diff := cmp.Diff(tt.obj, obj); diff != "" {
				t.Errorf("New() mismatch (-want +got):\n%s", diff)
			}
		})
	}
	// The common meta kinds (options, watch events) are there for clients.
	if !scheme.Recognizes(GroupVersion.WithKind("ListOptions")) {
		t.Error("the scheme does not recognize kopf.dev/v1 ListOptions")
	}
}

// kopfPeeringJSON is a peering object as Kopf and kopf-go leave it, with a
// record being removed (null) and a record from a newer writer.
const kopfPeeringJSON = `{
	"apiVersion": "kopf.dev/v1",
	"kind": "KopfPeering",
	"metadata": {"name": "default", "namespace": "ns"},
	"status": {
		"gone": null,
		"kopf-pod-1": {"priority": 100, "lifetime": 60, "lastseen": "2020-12-31T23:59:59.123456+00:00"},
		"dev@laptop/20201231235959/abc": {"priority": 666, "lifetime": 3600, "lastseen": "2020-12-31T23:59:59.123456+00:00", "message": "debugging"},
		"old": {"priority": 0}
	}
}`

func wantKopfPeering() *KopfPeering {
	return &KopfPeering{
		TypeMeta:   metav1.TypeMeta{APIVersion: "kopf.dev/v1", Kind: "KopfPeering"},
		ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: "ns"},
		Status: map[string]*Peer{
			"gone":       nil,
			"kopf-pod-1": {Priority: 100, Lifetime: intp(60), LastSeen: "2020-12-31T23:59:59.123456+00:00"},
			"dev@laptop/20201231235959/abc": {Priority: 666, Lifetime: intp(3600),
				LastSeen: "2020-12-31T23:59:59.123456+00:00", Message: "debugging"},
			"old": {Priority: 0},
		},
	}
}

func TestKopfPeeringJSON(t *testing.T) {
	var got KopfPeering
	if err := json.Unmarshal([]byte(kopfPeeringJSON), &got); err != nil {
		t.Fatalf("decode: %v", err)
	}
	if diff := cmp.Diff(wantKopfPeering(), &got); diff != "" {
		t.Errorf("decoded object mismatch (-want +got):\n%s", diff)
	}
	if r, ok := got.Status["gone"]; !ok || r != nil {
		t.Errorf(`status["gone"] = %v (present: %v), want a present nil record`, r, ok)
	}

	// Encoding back gives the same JSON: null kept, Kopf's keys, no
	// lifetime where there was none.
	raw, err := json.Marshal(&got)
	if err != nil {
		t.Fatalf("encode: %v", err)
	}
	var wantTree, gotTree any
	if err := json.Unmarshal([]byte(kopfPeeringJSON), &wantTree); err != nil {
		t.Fatalf("decode the fixture: %v", err)
	}
	if err := json.Unmarshal(raw, &gotTree); err != nil {
		t.Fatalf("decode the encoding: %v", err)
	}
	if diff := cmp.Diff(wantTree, gotTree); diff != "" {
		t.Errorf("round trip mismatch (-want +got):\n%s", diff)
	}
}

// TestKopfPeeringUnknownFields decodes records with fields this version does
// not know, from a newer Kopf or kopf-go.
func TestKopfPeeringUnknownFields(t *testing.T) {
	const body = `{"apiVersion": "kopf.dev/v1", "kind": "ClusterKopfPeering", "metadata": {"name": "default"},
		"status": {"kopf-pod-1": {"priority": 100, "lifetime": 60, "lastseen": "2020-12-31T23:59:59.123456+00:00",
			"namespace": "ns", "future": {"a": [1, 2]}}}}`
	var got ClusterKopfPeering
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatalf("decode: %v", err)
	}
	want := map[string]*Peer{"kopf-pod-1": {Priority: 100, Lifetime: intp(60), LastSeen: "2020-12-31T23:59:59.123456+00:00"}}
	if diff := cmp.Diff(want, got.Status); diff != "" {
		t.Errorf("status mismatch (-want +got):\n%s", diff)
	}
}

// TestSchemeDecode decodes a peering object through the scheme, as clients
// built on it do.
func TestSchemeDecode(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := AddToScheme(scheme); err != nil {
		t.Fatalf("AddToScheme() error: %v", err)
	}
	obj, gvk, err := serializer.NewCodecFactory(scheme).UniversalDeserializer().Decode([]byte(kopfPeeringJSON), nil, nil)
	if err != nil {
		t.Fatalf("Decode() error: %v", err)
	}
	if diff := cmp.Diff(&schema.GroupVersionKind{Group: "kopf.dev", Version: "v1", Kind: "KopfPeering"}, gvk); diff != "" {
		t.Errorf("kind mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantKopfPeering(), obj); diff != "" {
		t.Errorf("decoded object mismatch (-want +got):\n%s", diff)
	}
}
