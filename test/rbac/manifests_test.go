package rbac

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/kopf-go/kopf/test/testenv"
)

// readManifests reads the objects of a manifest file of the repository
// (one or several YAML documents), its namespace ("operators") replaced
// with ns.
func readManifests(t *testing.T, file, ns string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testenv.Root(), filepath.FromSlash(file)))
	if err != nil {
		t.Fatal(err)
	}
	return parseManifests(t, file, bytes.ReplaceAll(data, []byte("operators"), []byte(ns)))
}

// parseManifests parses YAML documents into objects; empty documents are
// left out.
func parseManifests(t *testing.T, source string, data []byte) []*unstructured.Unstructured {
	t.Helper()
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []*unstructured.Unstructured
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("%s: %v", source, err)
		}
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &obj.Object); err != nil {
			t.Fatalf("%s: %v", source, err)
		}
		if len(obj.Object) > 0 {
			out = append(out, obj)
		}
	}
}

// ledger records which roles came from which file and who they are bound
// to, for the comparison with the audit log.
var ledger = &grants{roles: map[roleKey]*heldRole{}}

type grants struct {
	mu       sync.Mutex
	roles    map[roleKey]*heldRole
	bindings []binding
}

// roleKey names a Role (namespace set) or a ClusterRole.
type roleKey struct{ kind, namespace, name string }

type heldRole struct {
	source string
	rules  []rbacv1.PolicyRule
}

type binding struct {
	role  roleKey
	users []string
}

// apply creates the objects in ns (deleting them when the test ends) and
// records their roles and bindings, the roles as coming from source.
// Cluster-scoped objects get "-<ns>" after their names (and the bindings'
// references to ClusterRoles too), so that scenarios do not share them.
func apply(t *testing.T, source, ns string, objs []*unstructured.Unstructured) {
	t.Helper()
	for _, obj := range objs {
		namespaced, err := admin.IsObjectNamespaced(obj)
		if err != nil {
			t.Fatalf("%s: %s %s: %v", source, obj.GetKind(), obj.GetName(), err)
		}
		if namespaced {
			obj.SetNamespace(ns)
		} else {
			obj.SetNamespace("")
			obj.SetName(obj.GetName() + "-" + ns)
		}
		if kind, _, _ := unstructured.NestedString(obj.Object, "roleRef", "kind"); kind == "ClusterRole" {
			name, _, _ := unstructured.NestedString(obj.Object, "roleRef", "name")
			if err := unstructured.SetNestedField(obj.Object, name+"-"+ns, "roleRef", "name"); err != nil {
				t.Fatal(err)
			}
		}
		ledger.record(t, source, obj)
		testenv.Create(t, admin, obj)
	}
}

// record notes a role or a binding.
func (g *grants) record(t *testing.T, source string, obj *unstructured.Unstructured) {
	t.Helper()
	g.mu.Lock()
	defer g.mu.Unlock()
	switch obj.GetKind() {
	case "Role", "ClusterRole":
		var role rbacv1.ClusterRole // a Role's fields are a subset
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &role); err != nil {
			t.Fatalf("%s: %v", source, err)
		}
		g.roles[roleKey{obj.GetKind(), obj.GetNamespace(), obj.GetName()}] = &heldRole{source: source, rules: role.Rules}
	case "RoleBinding", "ClusterRoleBinding":
		var b rbacv1.RoleBinding
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &b); err != nil {
			t.Fatalf("%s: %v", source, err)
		}
		key := roleKey{b.RoleRef.Kind, "", b.RoleRef.Name}
		if b.RoleRef.Kind == "Role" {
			key.namespace = obj.GetNamespace()
		}
		var users []string
		for _, s := range b.Subjects {
			if s.Kind == rbacv1.ServiceAccountKind {
				users = append(users, serviceAccountUser(s.Namespace, s.Name))
			}
		}
		g.bindings = append(g.bindings, binding{role: key, users: users})
	}
}

// held are the accesses that each source grants, each with the users
// bound to a role of that source that grants it. Rules for non-resource
// URLs (the metrics reader's) are left out: they are not requests to the
// API server.
func (g *grants) held() map[string]map[access][]string {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := map[string]map[access][]string{}
	for key, role := range g.roles {
		var users []string
		for _, b := range g.bindings {
			if b.role == key {
				users = append(users, b.users...)
			}
		}
		if out[role.source] == nil {
			out[role.source] = map[access][]string{}
		}
		for _, r := range role.rules {
			for _, a := range expand(r.APIGroups, r.Resources, r.Verbs) {
				out[role.source][a] = append(out[role.source][a], users...)
			}
		}
	}
	return out
}

// serviceAccountUser is the user name of a ServiceAccount.
func serviceAccountUser(namespace, name string) string {
	return "system:serviceaccount:" + namespace + ":" + name
}

// bindClusterRole binds the ClusterRole (its name as created by apply) to
// a ServiceAccount, recording the binding.
func bindClusterRole(t *testing.T, clusterRole, ns, account string) {
	t.Helper()
	b := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
		"metadata": map[string]any{"name": clusterRole + "-" + account},
		"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": clusterRole},
		"subjects": []any{map[string]any{"kind": "ServiceAccount", "namespace": ns, "name": account}},
	}}
	ledger.record(t, "", b)
	testenv.Create(t, admin, b)
}

// bindRole binds a Role of ns to a ServiceAccount (of another namespace,
// maybe), recording the binding.
func bindRole(t *testing.T, role, ns, accountNS, account string) {
	t.Helper()
	b := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
		"metadata": map[string]any{"name": role + "-" + account, "namespace": ns},
		"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role},
		"subjects": []any{map[string]any{"kind": "ServiceAccount", "namespace": accountNS, "name": account}},
	}}
	ledger.record(t, "", b)
	testenv.Create(t, admin, b)
}
