package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/kopf-go/kopf/handlers"
	"github.com/kopf-go/kopf/test/testenv"
)

// The manifests in 18-sharding's README, applied as they are, give the
// example what it needs: two replicas that run as its ServiceAccount, with
// the Deployment's arguments and the environment the downward API gives,
// share objects of any namespace and stop cleanly, and the API server
// refuses none of their requests. The Deployment's Pods are admitted in
// the README's namespace, which enforces Pod Security "restricted".
func TestShardingExampleDeployment(t *testing.T) {
	docs := readmeManifests(t)
	deployment := findKind(t, docs, "Deployment")
	args, _, _ := unstructured.NestedStringSlice(firstContainer(t, deployment), "args")
	ringArg := slices.IndexFunc(args, func(a string) bool { return strings.HasPrefix(a, "--shard-ring=") })
	if ringArg < 0 {
		t.Fatalf("the Deployment's arguments %q lack --shard-ring", args)
	}
	ring, podNS := strings.TrimPrefix(args[ringArg], "--shard-ring="), deployment.GetNamespace()
	applyManifests(t, docs)
	podAdmitted(t, deployment)
	kc := impersonating(t, "system:serviceaccount:"+podNS+":"+findKind(t, docs, "ServiceAccount").GetName())

	var copies []*shardCopy
	for i := range 2 {
		podID := fmt.Sprintf("%s-7d9f8-%d", deployment.GetName(), i)
		copies = append(copies, startShardCopy(t, "18-sharding", podID, ring, podNS, args,
			[]string{"KUBECONFIG=" + kc, "POD_ID=" + podID, "POD_NAMESPACE=" + podNS}))
	}
	waitForRing(t, copies)
	ns := env.Namespace(t)
	names := []string{"kopf-example-a", "kopf-example-b", "kopf-example-c", "kopf-example-d"}
	for _, name := range names {
		obj := exampleObject(t, ns)
		obj.SetName(name)
		if err := env.Client.Create(context.Background(), obj); err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
	}
	shardWait(t, copies, "every object is created and watched by its owner", 60*time.Second, func() (bool, string) {
		return handledByOwners(t, ns, podNS, ring, copies, names)
	})
	for _, c := range copies {
		if n := strings.Count(strings.ToLower(c.Output()), "forbidden"); n > 0 {
			t.Errorf("%s was refused %d times", c.podID, n)
		}
	}
	deleteAndStop(t, ns, copies, names, podNS, ring)
}

// readmeManifests are the objects of the README's YAML block.
func readmeManifests(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testenv.Root(), "examples", "18-sharding", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(data), "```yaml\n")
	block, _, closed := strings.Cut(block, "```")
	if !ok || !closed {
		t.Fatal("the README has no YAML block")
	}
	var docs []*unstructured.Unstructured
	for _, doc := range strings.Split(block, "\n---\n") {
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &obj.Object); err != nil {
			t.Fatalf("parse the README's manifest: %v\n%s", err, doc)
		}
		docs = append(docs, obj)
	}
	return docs
}

// findKind is the one manifest of the kind.
func findKind(t *testing.T, docs []*unstructured.Unstructured, kind string) *unstructured.Unstructured {
	t.Helper()
	i := slices.IndexFunc(docs, func(o *unstructured.Unstructured) bool { return o.GetKind() == kind })
	if i < 0 {
		t.Fatalf("the README's manifests have no %s", kind)
	}
	return docs[i]
}

// firstContainer is the first container of a Deployment's pods.
func firstContainer(t *testing.T, deployment *unstructured.Unstructured) map[string]any {
	t.Helper()
	containers, _, _ := unstructured.NestedSlice(deployment.Object, "spec", "template", "spec", "containers")
	if len(containers) == 0 {
		t.Fatal("the Deployment has no containers")
	}
	c, _ := containers[0].(map[string]any)
	return c
}

// applyManifests creates the objects (the control plane runs no
// controllers: the Deployment makes no pods), and deletes them after the
// test, except the namespace, which envtest would never finish deleting.
func applyManifests(t *testing.T, docs []*unstructured.Unstructured) {
	t.Helper()
	for _, obj := range docs {
		if err := env.Client.Create(context.Background(), obj.DeepCopy()); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("apply the %s %s: %v", obj.GetKind(), obj.GetName(), err)
		}
		if obj.GetKind() != "Namespace" {
			t.Cleanup(func() { _ = client.IgnoreNotFound(env.Client.Delete(context.Background(), obj.DeepCopy())) })
		}
	}
}

// podAdmitted creates a Pod of the Deployment's template in its namespace
// with a server-side dry run (admission runs, nothing is stored), and
// fails the test if it is refused.
func podAdmitted(t *testing.T, deployment *unstructured.Unstructured) {
	t.Helper()
	template, _, _ := unstructured.NestedMap(deployment.Object, "spec", "template")
	pod := &unstructured.Unstructured{Object: template}
	pod.SetAPIVersion("v1")
	pod.SetKind("Pod")
	pod.SetNamespace(deployment.GetNamespace())
	pod.SetName(deployment.GetName() + "-pod")
	ns := &corev1.Namespace{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Name: deployment.GetNamespace()}, ns); err != nil {
		t.Fatal(err)
	}
	if got := ns.Labels["pod-security.kubernetes.io/enforce"]; got != "restricted" {
		t.Errorf("the README's namespace enforces Pod Security %q, want restricted", got)
	}
	if err := env.Client.Create(context.Background(), pod, client.DryRunAll); err != nil {
		t.Errorf("the Deployment's Pod is refused: %v", err)
	}
}

// impersonating writes a kubeconfig that acts as the user: the package's
// administrator, impersonating it, so that RBAC decides as for the user.
func impersonating(t *testing.T, user string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, auth := range cfg.AuthInfos {
		auth.Impersonate = user
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// handledByOwners reports whether every object is owned by one of the
// copies, which ran its create handler and runs its daemon.
func handledByOwners(t *testing.T, ns, leaseNS, ring string, copies []*shardCopy, names []string) (bool, string) {
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion("kopf.dev/v1")
	list.SetKind("KopfExampleList")
	if err := env.Client.List(context.Background(), list, client.InNamespace(ns)); err != nil {
		t.Fatalf("list the objects: %v", err)
	}
	if len(list.Items) != len(names) {
		return false, fmt.Sprintf("%d objects, want %d", len(list.Items), len(names))
	}
	for _, obj := range list.Items {
		owner := obj.GetLabels()[handlers.ShardOwnerLabel(leaseNS, ring)]
		i := slices.IndexFunc(copies, func(c *shardCopy) bool { return c.member == owner })
		if i < 0 {
			return false, fmt.Sprintf("%s is owned by %q", obj.GetName(), owner)
		}
		message, _, _ := unstructured.NestedString(obj.Object, "status", "create_fn", "message")
		if want := "created by " + copies[i].podID; message != want {
			return false, fmt.Sprintf("%s: status.create_fn.message is %q, want %q", obj.GetName(), message, want)
		}
		if !strings.Contains(copies[i].Output(), fmt.Sprintf("%s runs the daemon of %s.", copies[i].podID, obj.GetName())) {
			return false, fmt.Sprintf("%s: no daemon in its owner %s", obj.GetName(), copies[i].podID)
		}
	}
	return true, ""
}
