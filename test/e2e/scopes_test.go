package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kopf-go/kopf/test/testenv"
)

// The runner with a pattern, as a process, with the RBAC of a namespaced
// operator plus the permission to watch namespaces: it serves a matching
// namespace created after its start, and not the one its negation
// excludes.
func TestRunnerServesNamespacesThatMatchLater(t *testing.T) {
	prefix := fmt.Sprintf("app%d", time.Now().UnixNano()%100000)
	served, skipped := prefix+"-1", prefix+"-skip"
	user := scopedKubeconfig(t, "e2e-"+prefix)
	p, err := testenv.StartProcess(filepath.Join(binDir, "01-minimal"),
		[]string{"--standalone", "--verbose", "--namespace=" + prefix + "-*,!" + skipped},
		[]string{"KUBECONFIG=" + user.path})
	if err != nil {
		t.Fatal(err)
	}
	op := &operator{p}
	t.Cleanup(func() {
		p.Kill()
		t.Logf("the output of 01-minimal:\n%s", p.Output())
	})
	op.waitForLine(t, "No namespace is served now; waiting for one that matches.")

	for _, ns := range []string{skipped, served} {
		createNamespace(t, ns)
		user.grant(t, ns)
		if err := env.Client.Create(context.Background(), exampleObject(t, ns)); err != nil {
			t.Fatal(err)
		}
	}
	key := client.ObjectKey{Namespace: served, Name: "kopf-example-1"}
	op.waitFor(t, "the object in the namespace created later is handled", func() bool {
		obj := newObject()
		return env.Client.Get(context.Background(), key, obj) == nil && obj.GetAnnotations()[diffbaseAnnotation] != ""
	})
	obj := newObject()
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: skipped, Name: "kopf-example-1"}, obj); err != nil {
		t.Fatal(err)
	}
	if obj.GetAnnotations()[diffbaseAnnotation] != "" {
		t.Errorf("the object in %s, which the negation excludes, was handled", skipped)
	}
	if strings.Contains(op.Output(), skipped+"/") {
		t.Errorf("the operator's output names an object in %s", skipped)
	}
	op.stop(t)
}

const diffbaseAnnotation = "kopf.zalando.org/last-handled-configuration"

// scoped is a user of the control plane with a kubeconfig file.
type scoped struct {
	name, path string
}

// scopedKubeconfig makes a user that may list and watch namespaces and
// nothing else until granted namespaces, and writes its kubeconfig file.
func scopedKubeconfig(t *testing.T, name string) scoped {
	t.Helper()
	user, err := env.Environment().AddUser(envtest.User{Name: name}, nil)
	if err != nil {
		t.Fatal(err)
	}
	data, err := user.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "list", "watch"}},
	}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: name}}}
	testenv.Create(t, env.Client, role, binding)
	return scoped{name: name, path: path}
}

// grant lets the user work with the example objects and post events in
// one namespace: a namespaced operator's RBAC.
func (u scoped) grant(t *testing.T, ns string) {
	t.Helper()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: u.name}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"kopf.dev"}, Resources: []string{"kopfexamples", "kopfexamples/status"}, Verbs: []string{"get", "list", "watch", "patch", "update"}},
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create"}},
	}}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: u.name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: u.name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: u.name}}}
	testenv.Create(t, env.Client, role, binding)
}

func createNamespace(t *testing.T, name string) {
	t.Helper()
	testenv.Create(t, env.Client, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
}
