package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// freezer is the identity of the record that freeze writes.
const freezer = "e2e-admin"

// peeringObject is the KopfPeering "default" of a namespace.
func peeringObject(namespace string) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion("kopf.dev/v1")
	obj.SetKind("KopfPeering")
	obj.SetNamespace(namespace)
	obj.SetName("default")
	return obj
}

// freeze creates the namespace's KopfPeering "default" and runs
// `kopf freeze` on it, as a user would before maintenance.
func freeze(t *testing.T, namespace string) {
	t.Helper()
	if err := env.Client.Create(context.Background(), peeringObject(namespace)); err != nil {
		t.Fatalf("create the KopfPeering: %v", err)
	}
	cmd := exec.Command(filepath.Join(binDir, "kopf"), "freeze", "--peering", "default", "-n", namespace,
		"--lifetime", "600", "--message", "e2e maintenance", "--id", freezer, "--kubeconfig", kubeconfig)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kopf freeze: %v\n%s", err, out)
	}
	want := fmt.Sprintf("Frozen: the record '%s' (priority 100, lifetime 600 s, message \"e2e maintenance\") is in KopfPeering %s/default.\n",
		freezer, namespace)
	if diff := cmp.Diff(want, string(out)); diff != "" {
		t.Errorf("the output of kopf freeze -want +got:\n%s", diff)
	}
}

// checkFrozen asserts that the freezer's record is still the only one:
// the standalone operator neither wrote its own nor removed it.
func checkFrozen(t *testing.T, namespace string) {
	t.Helper()
	obj := peeringObject(namespace)
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
		t.Fatalf("get the KopfPeering: %v", err)
	}
	status, _, _ := unstructured.NestedMap(obj.Object, "status")
	var ids []string
	for id := range status {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	if diff := cmp.Diff([]string{freezer}, ids); diff != "" {
		t.Errorf("the peer records -want +got:\n%s", diff)
	}
}
