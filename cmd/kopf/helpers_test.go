package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/test/testenv"
)

var (
	// env is the control plane of the package's tests, with the peering CRDs.
	env *testenv.Env
	// kubeconfig is a kubeconfig file for env, passed with --kubeconfig.
	kubeconfig string
)

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, "cli", testenv.PeeringCRDs(), func(f *testenv.Fixture) error {
		env, kubeconfig = f.Env, f.Kubeconfig
		return nil
	}))
}

// result is what one run of the command did.
type result struct {
	code           int
	stdout, stderr string
}

// kopf runs the command line against the package's control plane.
func kopf(t *testing.T, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), append(args, "--kubeconfig", kubeconfig), &stdout, &stderr)
	r := result{code, stdout.String(), stderr.String()}
	t.Logf("kopf %s: exit code %d\nstdout: %sstderr: %s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	return r
}

// succeeded fails the test unless the run exited with 0 and printed no
// errors; it returns the lines on stdout.
func (r result) succeeded(t *testing.T) []string {
	t.Helper()
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("exit code %d with stderr %q, want 0 and nothing", r.code, r.stderr)
	}
	return strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
}

// peeringObject is a KopfPeering (in a namespace) or a ClusterKopfPeering
// (namespace "").
func peeringObject(namespace, name string) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion("kopf.dev/v1")
	obj.SetKind("KopfPeering")
	if namespace == "" {
		obj.SetKind("ClusterKopfPeering")
	}
	obj.SetNamespace(namespace)
	obj.SetName(name)
	return obj
}

// createPeering creates a peering object with the given records, and
// deletes it when the test ends.
func createPeering(t *testing.T, namespace, name string, status map[string]any) {
	t.Helper()
	obj := peeringObject(namespace, name)
	if status != nil {
		obj.Object["status"] = status
	}
	if err := env.Client.Create(context.Background(), obj); err != nil {
		t.Fatalf("create %s %s/%s: %v", obj.GetKind(), namespace, name, err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), obj) })
}

// statusOf reads a peering object's status, as Kopf would see it.
func statusOf(t *testing.T, namespace, name string) map[string]any {
	t.Helper()
	obj := peeringObject(namespace, name)
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
		t.Fatalf("get %s %s/%s: %v", obj.GetKind(), namespace, name, err)
	}
	status, _, _ := unstructured.NestedMap(obj.Object, "status")
	return status
}

// keys are the identities in a status, sorted.
func keys(status map[string]any) []string {
	out := []string{}
	for k := range status {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// clusterName is a ClusterKopfPeering name of the test's own.
func clusterName(t *testing.T) string {
	return fmt.Sprintf("cli-%s-%d", strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-")), time.Now().UnixNano()%100000)
}
