package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/kopf-go/kopf/handlers"
	"github.com/kopf-go/kopf/test/testenv"

	"github.com/kopf-go/kopf/pkg/cause"
)

// The RBAC of config/rbac, for each kind of scope, is exactly enough: the
// runner, with peering, connecting as a ServiceAccount bound to those
// roles only, handles objects in every served namespace, and its handler
// reads a config map beside each.
func TestRunnerWithTheDocumentedRBAC(t *testing.T) {
	tests := []struct {
		name string
		// args are the runner's namespace flags for the namespaces.
		args func(ns []string) []string
		// clusterWide binds clusterwide.yaml instead of namespaced.yaml's
		// Role in each namespace; globs also binds namespaces.yaml.
		clusterWide, globs bool
	}{
		{"one namespace", func(ns []string) []string { return []string{"-n", ns[0]} }, false, false},
		{"several namespaces", func(ns []string) []string { return []string{"-n", ns[0], "-n", ns[1]} }, false, false},
		{"a pattern", func(ns []string) []string { return []string{"-n", ns[0][:len(ns[0])-2] + "-?"} }, false, true},
		{"the whole cluster", func([]string) []string { return []string{"-A"} }, true, false},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkLeaks(t)
			base := fmt.Sprintf("rbac%d-%d", time.Now().UnixNano()%100000, i)
			home := env.Namespace(t) // the ServiceAccount's
			served := []string{base + "-1", base + "-2"}
			sa := serviceAccount(t, home, "operator")
			for _, ns := range served {
				namespace(t, ns)
				createPeering(t, ns, "default")
				if !tt.clusterWide {
					role := manifest[rbacv1.Role](t, "namespaced.yaml")
					role.Namespace = ns
					bindRole(t, role, sa)
				}
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "settings"}, Data: map[string]string{"colour": ns}}
				if err := env.Client.Create(context.Background(), cm); err != nil {
					t.Fatal(err)
				}
			}
			if tt.clusterWide {
				createPeering(t, "", "default")
				bindClusterRole(t, manifest[rbacv1.ClusterRole](t, "clusterwide.yaml"), sa)
			}
			if tt.globs {
				bindClusterRole(t, manifest[rbacv1.ClusterRole](t, "namespaces.yaml"), sa)
			}

			reg, kind := kex()
			handlers.OnCreate(kind, "create_fn", func(ctx context.Context, obj *unstructured.Unstructured, _ *cause.Change) (any, error) {
				var read corev1.ConfigMap
				if err := handlers.Client(ctx).Get(ctx, client.ObjectKey{Namespace: obj.GetNamespace(), Name: "settings"}, &read); err != nil {
					return nil, err
				}
				return map[string]any{"colour": read.Data["colour"]}, nil
			})
			args := append([]string{"--kubeconfig", sa.kubeconfig(t)}, tt.args(served)...)
			runRunner(t, reg, args)
			handled := served
			if tt.name == "one namespace" {
				handled = served[:1]
			}
			for _, ns := range handled {
				create(t, exampleObject(t, ns))
			}
			for _, ns := range handled {
				eventually(t, "the handler in "+ns+" reads its config map", func() bool {
					got, _, _ := unstructured.NestedString(get(t, ns, "kopf-example-1").Object, "status", "create_fn", "colour")
					return got == ns
				})
			}
			eventually(t, "the operator's peer record is in the peering", func() bool {
				peeringNS := served[0]
				if tt.clusterWide {
					peeringNS = ""
				}
				return len(peers(t, peeringNS, "default")) > 0
			})
		})
	}
}

// runRunner runs the standalone runner in the test, with the command
// line, until the test ends; it must then return nil.
func runRunner(t *testing.T, reg *handlers.Registry, args []string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- handlers.Run(ctx, reg, args, handlers.RunOptions{}) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the runner returned %v, want nil", err)
		}
	})
}

// manifest reads one of config/rbac's manifests.
func manifest[T any](t *testing.T, name string) *T {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testenv.Root(), "config", "rbac", name))
	if err != nil {
		t.Fatal(err)
	}
	var out T
	if err := yaml.UnmarshalStrict(data, &out); err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	return &out
}

// account is a ServiceAccount that an operator connects as.
type account struct {
	namespace, name string
}

func serviceAccount(t *testing.T, namespace, name string) account {
	t.Helper()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	if err := env.Client.Create(context.Background(), sa); err != nil {
		t.Fatal(err)
	}
	return account{namespace: namespace, name: name}
}

func (a account) subject() rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: a.namespace, Name: a.name}
}

// kubeconfig writes a kubeconfig file with a token of the account.
func (a account) kubeconfig(t *testing.T) string {
	t.Helper()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: a.namespace, Name: a.name}}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptrTo[int64](3600)}}
	if err := env.Client.SubResource("token").Create(context.Background(), sa, req); err != nil {
		t.Fatalf("request a token for %s/%s: %v", a.namespace, a.name, err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["envtest"] = &clientcmdapi.Cluster{Server: env.Config.Host, CertificateAuthorityData: env.Config.CAData}
	cfg.AuthInfos["operator"] = &clientcmdapi.AuthInfo{Token: req.Status.Token}
	cfg.Contexts["operator"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "operator"}
	cfg.CurrentContext = "operator"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

func ptrTo[T any](v T) *T { return &v }

// bindRole creates the Role and binds it to the account in its namespace.
func bindRole(t *testing.T, role *rbacv1.Role, a account) {
	t.Helper()
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: role.Namespace, Name: role.Name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects: []rbacv1.Subject{a.subject()}}
	testenv.Create(t, env.Client, role, binding)
}

// bindClusterRole creates the ClusterRole (named after the account, so
// that tests do not share it) and binds it to the account.
func bindClusterRole(t *testing.T, role *rbacv1.ClusterRole, a account) {
	t.Helper()
	role.Name += "-" + a.namespace
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{a.subject()}}
	testenv.Create(t, env.Client, role, binding)
}
