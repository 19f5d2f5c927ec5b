package admission

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/kopf-go/kopf/handlers"
	"github.com/kopf-go/kopf/pkg/kopftest"
	"github.com/kopf-go/kopf/test/testenv"
)

// Two replicas with a namespace for their Leases: each holds a presence
// Lease, one writes; the first to stop leaves the webhooks to the other,
// and the last cleans up, dropping its presence and releasing the
// writer's Lease.
func TestManagedReplicas(t *testing.T) {
	kopftest.NoLeaks(t)
	const name = "replicas.kopf.dev"
	ns := namespace(t)
	deleteConfigurations(t, name)
	opts := handlers.WebhookOptions{Managed: name, LeaseNamespace: ns}
	a := startReplica(t, "a", cfg, managedTestRegistry(), opts)
	b := startReplica(t, "b", cfg, managedTestRegistry(), opts)
	validating, mutating := named(allValidating, name), named(allMutating, name)
	waitForWebhooks(t, name, validating, mutating)
	kopftest.Eventually(t, "two presence Leases", 30*time.Second, func() bool { return len(presenceLeases(t, ns, name)) == 2 })
	kopftest.Eventually(t, "a writer", 30*time.Second, func() bool { return writerHolder(t, ns, name) != "" })
	writes := func(r *replica) int { return len(r.logs.with("This replica writes the webhook configurations.")) }
	if got := writes(a) + writes(b); got != 1 {
		t.Errorf("%d terms of writers began, want 1", got)
	}

	if err := a.stop(); err != nil {
		t.Fatal(err)
	}
	if got := a.logs.with("The webhooks stay: other replicas serve them."); len(got) != 1 {
		t.Errorf("the first replica to stop did not leave the webhooks to the other: %q", a.logs.with("webhooks"))
	}
	if v, m := webhookNames(t, name); !slices.Equal(v, validating) || !slices.Equal(m, mutating) {
		t.Errorf("after the first stop, the webhooks are %v and %v, want all", v, m)
	}
	if got := len(presenceLeases(t, ns, name)); got != 1 {
		t.Errorf("%d presence Leases after the first stop, want 1", got)
	}
	kopftest.Eventually(t, "the other replica writing", 30*time.Second, func() bool { return writes(b) == 1 })

	if err := b.stop(); err != nil {
		t.Fatal(err)
	}
	waitForWebhooks(t, name, []string{"kept." + name}, []string{})
	if got := presenceLeases(t, ns, name); len(got) != 0 {
		t.Errorf("presence Leases after the last stop: %v", got)
	}
	if got := writerHolder(t, ns, name); got != "" {
		t.Errorf("the writer's Lease is held by %q after the last stop, want released", got)
	}
	for _, r := range []*replica{a, b} {
		if errs := r.logs.errors(); len(errs) > 0 {
			t.Errorf("errors were logged: %q", errs)
		}
	}
}

// The RBAC of config/rbac/webhooks.yaml is enough, as a ServiceAccount
// bound to it only: the configurations are created, watched and applied
// again after a hand edit, and cleaned up; the Leases are written. And
// each verb is needed as the file says: without create, the apply that
// creates a configuration is refused, although create is narrowed by
// resourceNames (an apply names its object; a plain create does not, so
// that create by name does not allow it); without the Leases' Role, the
// replica stops at once with the refusal, rather than never be ready.
func TestManagedWithTheDocumentedRBAC(t *testing.T) {
	const name = "auto.kopf.dev" // as in the file
	for _, tt := range []struct {
		name    string
		without string // a verb taken out of the ClusterRole
	}{{"as documented", ""}, {"without create", "create"}, {"without the Leases' Role", "Role"}} {
		t.Run(tt.name, func(t *testing.T) {
			kopftest.NoLeaks(t)
			ns := namespace(t)
			deleteConfigurations(t, name)
			clusterRole, role := webhookRBAC(t)
			clusterRole.Name += "-" + ns
			if tt.without == "Role" {
				role.Rules = nil
			} else if tt.without != "" {
				verbs := clusterRole.Rules[0].Verbs
				clusterRole.Rules[0].Verbs = slices.DeleteFunc(slices.Clone(verbs), func(v string) bool { return v == tt.without })
			}
			role.Namespace = ns
			sa := boundServiceAccount(t, ns, clusterRole, role)

			r := startReplica(t, "operator", sa, managedTestRegistry(), handlers.WebhookOptions{Managed: name, LeaseNamespace: ns})
			if tt.without != "" {
				select {
				case <-r.exited:
				case <-time.After(60 * time.Second):
					t.Fatal("the operator did not stop on its own")
				}
				want := "cannot create resource \"validatingwebhookconfigurations\""
				if tt.without == "Role" {
					want = "cannot create resource \"leases\""
				}
				if !apierrors.IsForbidden(r.err) || !strings.Contains(r.err.Error(), want) {
					t.Errorf("the operator returned %v, want forbidden: %s", r.err, want)
				}
				r.err = nil // seen: the cleanup's stop does not report it again
				return
			}
			waitForWebhooks(t, name, named(allValidating, name), named(allMutating, name))
			editTimeout(t, name, "plain."+name, 5)
			kopftest.Eventually(t, "the hand edit reverted", 30*time.Second, func() bool { return timeout(t, name, "plain."+name) == 30 })

			// A plain create by the ServiceAccount is not allowed by the
			// create narrowed to the name: the request names no object.
			other := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}}
			c, err := client.New(sa, client.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Create(context.Background(), other); !apierrors.IsForbidden(err) {
				t.Errorf("a plain create as the ServiceAccount returned %v, want forbidden", err)
			}

			if err := r.stop(); err != nil {
				t.Fatal(err)
			}
			waitForWebhooks(t, name, []string{"kept." + name}, []string{})
			if got := presenceLeases(t, ns, name); len(got) != 0 {
				t.Errorf("presence Leases after the stop: %v", got)
			}
			if errs := r.logs.errors(); len(errs) > 0 {
				t.Errorf("errors were logged: %q", errs)
			}
		})
	}
}

// webhookRBAC reads config/rbac/webhooks.yaml.
func webhookRBAC(t *testing.T) (*rbacv1.ClusterRole, *rbacv1.Role) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testenv.Root(), "config", "rbac", "webhooks.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	docs := strings.Split(string(data), "\n---\n")
	if len(docs) != 2 {
		t.Fatalf("webhooks.yaml has %d documents, want 2", len(docs))
	}
	var clusterRole rbacv1.ClusterRole
	var role rbacv1.Role
	if err := yaml.UnmarshalStrict([]byte(docs[0]), &clusterRole); err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict([]byte(docs[1]), &role); err != nil {
		t.Fatal(err)
	}
	return &clusterRole, &role
}

// boundServiceAccount creates a ServiceAccount in ns bound to the roles
// only, and returns a client config with a token of it.
func boundServiceAccount(t *testing.T, ns string, clusterRole *rbacv1.ClusterRole, role *rbacv1.Role) *rest.Config {
	t.Helper()
	ctx := context.Background()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "operator"}}
	subject := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: sa.Name}}
	testenv.Create(t, k8s, sa, clusterRole, role,
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: clusterRole.Name}, Subjects: subject,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole.Name}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: role.Name}, Subjects: subject,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name}})
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
	if err := k8s.SubResource("token").Create(ctx, sa, req); err != nil {
		t.Fatalf("request a token: %v", err)
	}
	return &rest.Config{Host: cfg.Host, BearerToken: req.Status.Token, TLSClientConfig: rest.TLSClientConfig{CAData: cfg.CAData}}
}
