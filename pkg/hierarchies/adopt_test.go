package hierarchies

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestAdopt(t *testing.T) {
	ownerLabels := map[string]string{"label-1": "value-1", "label-2": "value-2"}
	deploymentRef := metav1.OwnerReference{
		APIVersion: "apps/v1", Kind: "Deployment", Name: "owner-deployment", UID: "deployment-uid",
		Controller: new(true), BlockOwnerDeletion: new(true),
	}
	nodeRef := metav1.OwnerReference{
		APIVersion: "v1", Kind: "Node", Name: "node-1", UID: "node-uid",
		Controller: new(true), BlockOwnerDeletion: new(true),
	}
	tests := []struct {
		name  string
		child Object
		owner Object
		opts  []AdoptOption
		want  Object
	}{{
		name:  "a bare typed pod, as in Kopf's example 02",
		child: newPod(metav1.ObjectMeta{}),
		owner: unstructuredOwner(),
		want: newPod(metav1.ObjectMeta{
			GenerateName: ownerName + "-", Namespace: ownerNamespace, Labels: withKind(ownerLabels, "kopfexample.kopf.dev"),
			OwnerReferences: []metav1.OwnerReference{kopfExampleRef()},
		}),
	}, {
		name:  "a bare unstructured pod, typed owner from the scheme",
		child: newUnstructuredPod(nil),
		owner: typedOwner(false),
		opts:  []AdoptOption{OwnerScheme(testScheme())},
		want: newUnstructuredPod(map[string]any{
			"generateName": "owner-deployment-",
			"namespace":    ownerNamespace,
			"labels":       map[string]any{"app": "owner", OwnerKindLabel: "deployment.apps"},
			"ownerReferences": []any{map[string]any{
				"apiVersion": "apps/v1", "kind": "Deployment", "name": "owner-deployment", "uid": "deployment-uid",
				"controller": true, "blockOwnerDeletion": true,
			}},
		}),
	}, {
		name: "the child's own metadata is kept",
		child: newPod(metav1.ObjectMeta{
			Name: "own-name", Namespace: "own-namespace", Labels: map[string]string{"label-1": "own"},
		}),
		owner: unstructuredOwner(),
		want: newPod(metav1.ObjectMeta{
			Name: "own-name", Namespace: "own-namespace",
			Labels:          map[string]string{"label-1": "own", "label-2": "value-2", OwnerKindLabel: "kopfexample.kopf.dev"},
			OwnerReferences: []metav1.OwnerReference{kopfExampleRef()},
		}),
	}, {
		name: "forced and strict overwrite it",
		child: newPod(metav1.ObjectMeta{
			GenerateName: "own-", Namespace: "own-namespace", Labels: map[string]string{"label-1": "own", "mine": "x", OwnerKindLabel: "another"},
		}),
		owner: unstructuredOwner(),
		opts:  []AdoptOption{Forced(), Strict()},
		want: newPod(metav1.ObjectMeta{
			Name: ownerName, Namespace: ownerNamespace,
			Labels:          map[string]string{"label-1": "value-1", "label-2": "value-2", "mine": "x", OwnerKindLabel: "kopfexample.kopf.dev"},
			OwnerReferences: []metav1.OwnerReference{kopfExampleRef()},
		}),
	}, {
		name:  "a typed deployment with its pod template labelled",
		child: newDeployment(nil, map[string]string{"app": "d"}),
		owner: typedOwner(true),
		opts:  []AdoptOption{Nested("spec.template")},
		want: func() Object {
			// The template's pods are the deployment's, not the owner's: they
			// get no owner-kind label.
			d := newDeployment(map[string]string{"app": "owner", OwnerKindLabel: "deployment.apps"}, map[string]string{"app": "d"})
			d.Namespace = ownerNamespace
			d.OwnerReferences = []metav1.OwnerReference{deploymentRef}
			return d
		}(),
	}, {
		name:  "nested and forced: the template's labels too",
		child: newDeployment(nil, map[string]string{"app": "d"}),
		owner: typedOwner(true),
		opts:  []AdoptOption{Nested("spec.template"), Forced()},
		want: func() Object {
			d := newDeployment(map[string]string{"app": "owner", OwnerKindLabel: "deployment.apps"}, map[string]string{"app": "owner"})
			d.Name, d.GenerateName = "", "owner-deployment-"
			d.Namespace = ownerNamespace
			d.OwnerReferences = []metav1.OwnerReference{deploymentRef}
			return d
		}(),
	}, {
		name:  "a cluster-scoped owner leaves the namespace alone",
		child: newPod(metav1.ObjectMeta{Namespace: "own-namespace"}),
		owner: clusterOwner(),
		want: newPod(metav1.ObjectMeta{
			GenerateName: "node-1-", Namespace: "own-namespace", Labels: map[string]string{"zone": "a", OwnerKindLabel: "node"},
			OwnerReferences: []metav1.OwnerReference{nodeRef},
		}),
	}, {
		name:  "a cluster-scoped owner, forced, clears the namespace",
		child: newPod(metav1.ObjectMeta{Namespace: "own-namespace"}),
		owner: clusterOwner(),
		opts:  []AdoptOption{Forced()},
		want: newPod(metav1.ObjectMeta{
			GenerateName: "node-1-", Labels: map[string]string{"zone": "a", OwnerKindLabel: "node"},
			OwnerReferences: []metav1.OwnerReference{nodeRef},
		}),
	}, {
		name:  "reference options apply",
		child: newPod(metav1.ObjectMeta{}),
		owner: unstructuredOwner(),
		opts:  []AdoptOption{NotController(), NoBlockOwnerDeletion()},
		want: newPod(metav1.ObjectMeta{
			GenerateName: ownerName + "-", Namespace: ownerNamespace, Labels: ownerLabels,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: ownerAPIVersion, Kind: ownerKind, Name: ownerName, UID: ownerUID,
				Controller: new(false), BlockOwnerDeletion: new(false),
			}},
		}),
	}, {
		name:  "an owner without labels adds only its kind's",
		child: &corev1.ConfigMap{},
		owner: &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "ns", "uid": "ns-uid"},
		}},
		want: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			GenerateName: "ns-", Labels: map[string]string{OwnerKindLabel: "namespace"},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Namespace", Name: "ns", UID: "ns-uid",
				Controller: new(true), BlockOwnerDeletion: new(true),
			}},
		}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for range 2 { // adopting again changes nothing: no second reference
				if err := Adopt(tt.child, tt.owner, tt.opts...); err != nil {
					t.Fatalf("Adopt() error = %v", err)
				}
			}
			if diff := cmp.Diff(tt.want, tt.child); diff != "" {
				t.Errorf("child -want +got:\n%s", diff)
			}
		})
	}
}

// withKind is labels with the owner-kind label that Adopt adds.
func withKind(labels map[string]string, kind string) map[string]string {
	out := map[string]string{OwnerKindLabel: kind}
	for k, v := range labels {
		out[k] = v
	}
	return out
}

// TestAdoptErrors checks that an owner that cannot be referred to leaves
// the child as it was.
func TestAdoptErrors(t *testing.T) {
	noUID := unstructuredOwner()
	noUID.SetUID("")
	tests := []struct {
		name  string
		owner Object
		want  string
	}{
		{"no uid", noUID, "adopt: refer to the owner KopfExample kopf-example-1: it has no uid"},
		{"no kind", typedOwner(false), "adopt: refer to the owner owner-deployment: its apiVersion and kind are empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			child := newPod(metav1.ObjectMeta{})
			err := Adopt(child, tt.owner, Nested("spec.template"), OwnerScheme(nil))
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("Adopt() error = %v, want it to start with %q", err, tt.want)
			}
			if diff := cmp.Diff(newPod(metav1.ObjectMeta{}), child); diff != "" {
				t.Errorf("child -want +got:\n%s", diff)
			}
		})
	}
}

func TestEachChild(t *testing.T) {
	pods := []*corev1.Pod{
		newPod(metav1.ObjectMeta{}),
		newPod(metav1.ObjectMeta{Name: "second"}),
		newPod(metav1.ObjectMeta{}),
	}
	if err := EachChild(pods, func(p *corev1.Pod) error { return Adopt(p, unstructuredOwner()) }); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range pods {
		got = append(got, displayName(p)+" in "+p.Namespace)
	}
	want := []string{"kopf-example-1-* in owner-namespace", "second in owner-namespace", "kopf-example-1-* in owner-namespace"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("children -want +got:\n%s", diff)
	}

	// The first error stops the loop and says which child it was.
	boom := errors.New("boom")
	var calls int
	err := EachChild([]Object{newPod(metav1.ObjectMeta{}), newUnstructuredPod(map[string]any{"name": "bad"}), newPod(metav1.ObjectMeta{})},
		func(o Object) error {
			calls++
			if o.GetName() == "bad" {
				return boom
			}
			return nil
		})
	if !errors.Is(err, boom) || err.Error() != "child 1 (bad): boom" {
		t.Errorf("EachChild() error = %v, want %q wrapping boom", err, "child 1 (bad): boom")
	}
	if calls != 2 {
		t.Errorf("EachChild() called fn %d times, want 2", calls)
	}
}
