package hierarchies

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// kopfExampleRef is the reference to unstructuredOwner with Kopf's
// defaults.
func kopfExampleRef() metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: ownerAPIVersion, Kind: ownerKind, Name: ownerName, UID: ownerUID,
		Controller: new(true), BlockOwnerDeletion: new(true),
	}
}

func TestAppendOwnerReference(t *testing.T) {
	deploymentRef := metav1.OwnerReference{
		APIVersion: "apps/v1", Kind: "Deployment", Name: "owner-deployment", UID: "deployment-uid",
		Controller: new(true), BlockOwnerDeletion: new(true),
	}
	other := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "cm", UID: "other-uid"}
	tests := []struct {
		name  string
		child Object
		owner Object
		opts  []ReferenceOption
		want  []metav1.OwnerReference
	}{{
		name:  "typed child, unstructured owner",
		child: newPod(metav1.ObjectMeta{}),
		owner: unstructuredOwner(),
		want:  []metav1.OwnerReference{kopfExampleRef()},
	}, {
		name:  "unstructured child without metadata",
		child: newUnstructuredPod(nil),
		owner: unstructuredOwner(),
		want:  []metav1.OwnerReference{kopfExampleRef()},
	}, {
		name:  "typed owner with its TypeMeta",
		child: newPod(metav1.ObjectMeta{}),
		owner: typedOwner(true),
		want:  []metav1.OwnerReference{deploymentRef},
	}, {
		name:  "typed owner without TypeMeta, kind from the scheme",
		child: newUnstructuredPod(map[string]any{}),
		owner: typedOwner(false),
		opts:  []ReferenceOption{OwnerScheme(testScheme())},
		want:  []metav1.OwnerReference{deploymentRef},
	}, {
		name:  "typed owner without TypeMeta, explicit kind",
		child: newPod(metav1.ObjectMeta{}),
		owner: typedOwner(false),
		opts:  []ReferenceOption{OwnerGVK(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"})},
		want:  []metav1.OwnerReference{deploymentRef},
	}, {
		name:  "the explicit kind wins over the TypeMeta",
		child: newPod(metav1.ObjectMeta{}),
		owner: unstructuredOwner(),
		opts:  []ReferenceOption{OwnerGVK(schema.GroupVersionKind{Group: "kopf.dev", Version: "v2", Kind: ownerKind})},
		want: []metav1.OwnerReference{{
			APIVersion: "kopf.dev/v2", Kind: ownerKind, Name: ownerName, UID: ownerUID,
			Controller: new(true), BlockOwnerDeletion: new(true),
		}},
	}, {
		name:  "cluster-scoped owner of the core group",
		child: newPod(metav1.ObjectMeta{}),
		owner: clusterOwner(),
		want: []metav1.OwnerReference{{
			APIVersion: "v1", Kind: "Node", Name: "node-1", UID: "node-uid",
			Controller: new(true), BlockOwnerDeletion: new(true),
		}},
	}, {
		name:  "flags turned off are written as false",
		child: newPod(metav1.ObjectMeta{}),
		owner: unstructuredOwner(),
		opts:  []ReferenceOption{NotController(), NoBlockOwnerDeletion()},
		want: []metav1.OwnerReference{{
			APIVersion: ownerAPIVersion, Kind: ownerKind, Name: ownerName, UID: ownerUID,
			Controller: new(false), BlockOwnerDeletion: new(false),
		}},
	}, {
		name:  "appended after other owners",
		child: newPod(metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{other}}),
		owner: unstructuredOwner(),
		want:  []metav1.OwnerReference{other, kopfExampleRef()},
	}, {
		name: "the same uid is there: nothing changes, whatever the other fields",
		child: newPod(metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{
			{APIVersion: "x/v9", Kind: "Renamed", Name: "renamed", UID: ownerUID},
		}}),
		owner: unstructuredOwner(),
		want:  []metav1.OwnerReference{{APIVersion: "x/v9", Kind: "Renamed", Name: "renamed", UID: ownerUID}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for range 2 { // the second call must change nothing
				if err := AppendOwnerReference(tt.child, tt.owner, tt.opts...); err != nil {
					t.Fatalf("AppendOwnerReference() error = %v", err)
				}
			}
			if diff := cmp.Diff(tt.want, tt.child.GetOwnerReferences()); diff != "" {
				t.Errorf("owner references -want +got:\n%s", diff)
			}
		})
	}
}

// TestAppendOwnerReferenceWireFields pins the exact fields of the reference
// in an unstructured child, as Kopf writes them into a dict.
func TestAppendOwnerReferenceWireFields(t *testing.T) {
	child := &unstructured.Unstructured{Object: map[string]any{}}
	if err := AppendOwnerReference(child, unstructuredOwner()); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"metadata": map[string]any{"ownerReferences": []any{map[string]any{
		"apiVersion":         ownerAPIVersion,
		"kind":               ownerKind,
		"name":               ownerName,
		"uid":                ownerUID,
		"controller":         true,
		"blockOwnerDeletion": true,
	}}}}
	if diff := cmp.Diff(want, child.Object); diff != "" {
		t.Errorf("child -want +got:\n%s", diff)
	}
}

func TestAppendOwnerReferenceErrors(t *testing.T) {
	noUID := unstructuredOwner()
	noUID.SetUID("")
	noName := unstructuredOwner()
	noName.SetName("")
	tests := []struct {
		name  string
		owner Object
		opts  []ReferenceOption
		want  string // a prefix of the error's text
	}{
		{"no uid", noUID, nil, "refer to the owner KopfExample kopf-example-1: it has no uid; create it or read it from the cluster first"},
		{"no name", noName, nil, "refer to the owner KopfExample: it has no name"},
		{"no kind", typedOwner(false), []ReferenceOption{OwnerScheme(nil)}, "refer to the owner owner-deployment: its apiVersion and kind are empty; set them, or pass OwnerGVK or OwnerScheme"},
		{"not in the scheme", &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "job", UID: "u"}}, []ReferenceOption{OwnerScheme(testScheme())}, "find the kind of the owner job: no kind is registered"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			child := newPod(metav1.ObjectMeta{})
			err := AppendOwnerReference(child, tt.owner, tt.opts...)
			if err == nil {
				t.Fatal("AppendOwnerReference() succeeded, want an error")
			}
			if !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("AppendOwnerReference() error = %q, want it to start with %q", err, tt.want)
			}
			if refs := child.GetOwnerReferences(); refs != nil {
				t.Errorf("the child got references %v despite the error", refs)
			}
		})
	}
}

func TestRemoveOwnerReference(t *testing.T) {
	other := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "cm", UID: "other-uid"}
	// Only the uid identifies the owner: the other fields may differ.
	stale := metav1.OwnerReference{APIVersion: "x/v9", Kind: "Renamed", Name: "renamed", UID: ownerUID}
	noUID := unstructuredOwner()
	noUID.SetUID("")
	tests := []struct {
		name  string
		child Object
		owner Object
		want  []metav1.OwnerReference
	}{{
		name:  "typed child: removed by uid, others kept",
		child: newPod(metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{other, stale, other}}),
		owner: unstructuredOwner(),
		want:  []metav1.OwnerReference{other, other},
	}, {
		name: "unstructured child",
		child: newUnstructuredPod(map[string]any{"ownerReferences": []any{
			map[string]any{"apiVersion": "x/v9", "kind": "Renamed", "name": "renamed", "uid": ownerUID},
			map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "uid": "other-uid"},
		}}),
		owner: unstructuredOwner(),
		want:  []metav1.OwnerReference{other},
	}, {
		name:  "typed owner without a kind: the uid is enough",
		child: newPod(metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{{UID: "deployment-uid"}, other}}),
		owner: typedOwner(false),
		want:  []metav1.OwnerReference{other},
	}, {
		name:  "the only reference: the list is left empty",
		child: newPod(metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{kopfExampleRef()}}),
		owner: unstructuredOwner(),
		want:  []metav1.OwnerReference{},
	}, {
		name:  "not there: nothing changes",
		child: newPod(metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{other}}),
		owner: unstructuredOwner(),
		want:  []metav1.OwnerReference{other},
	}, {
		name:  "no references at all",
		child: newUnstructuredPod(nil),
		owner: unstructuredOwner(),
		want:  nil,
	}, {
		name:  "an owner without a uid removes nothing",
		child: newPod(metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{{Name: "no-uid"}}}),
		owner: noUID,
		want:  []metav1.OwnerReference{{Name: "no-uid"}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			RemoveOwnerReference(tt.child, tt.owner)
			if diff := cmp.Diff(tt.want, tt.child.GetOwnerReferences()); diff != "" {
				t.Errorf("owner references -want +got:\n%s", diff)
			}
		})
	}
}

// TestAppendThenRemove checks that both directions agree on the reference,
// for typed and unstructured children.
func TestAppendThenRemove(t *testing.T) {
	for _, child := range []Object{newPod(metav1.ObjectMeta{}), newUnstructuredPod(nil)} {
		if err := AppendOwnerReference(child, typedOwner(true)); err != nil {
			t.Fatal(err)
		}
		RemoveOwnerReference(child, typedOwner(false))
		if diff := cmp.Diff(0, len(child.GetOwnerReferences())); diff != "" {
			t.Errorf("%T: references left -want +got:\n%s", child, diff)
		}
	}
}

// TestAppendOwnerReferenceCopies checks that a shallow copy of the child,
// which shares its references' backing array, does not see the new
// reference.
func TestAppendOwnerReferenceCopies(t *testing.T) {
	refs := make([]metav1.OwnerReference, 1, 4)
	refs[0] = metav1.OwnerReference{UID: "other-uid"}
	child := newPod(metav1.ObjectMeta{OwnerReferences: refs})
	shallow := *child
	if err := AppendOwnerReference(child, unstructuredOwner()); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]metav1.OwnerReference{{UID: "other-uid"}}, shallow.OwnerReferences); diff != "" {
		t.Errorf("the shallow copy's references -want +got:\n%s", diff)
	}
	if got := refs[:2][1]; got.UID != "" {
		t.Errorf("the shared backing array was written: %v", got)
	}
}
