package conversion

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/kopf-go/kopf/pkg/kopftest"
	"github.com/kopf-go/kopf/test/testenv"
)

// A write refused for want of rights is not retried forever: Start
// returns the error, alone or as the elected writer.
func TestForbiddenIsFatal(t *testing.T) {
	gk := newCRD(t, kindOf("ConvForbidden"))
	t.Run("alone", func(t *testing.T) {
		kopftest.NoLeaks(t)
		c := conversions(t, user(t, "nobody"), urlConfig(t), gk)
		c.RetryInterval = 100 * time.Millisecond // a retry would come at once
		if err := start(t, c).wait(t); !apierrors.IsForbidden(err) {
			t.Fatalf("Start returned %v, want a Forbidden error", err)
		}
	})
	t.Run("elected", func(t *testing.T) {
		kopftest.NoLeaks(t)
		ns := env.Namespace(t)
		// Rights to the Lease only: elected, then refused on the CRD.
		bind(t, ns, "leases-only", roleOf(t, "config/rbac/webhooks.yaml", "Role"))
		c := conversions(t, user(t, "leases-only"), urlConfig(t), gk)
		c.Namespace, c.RetryInterval = ns, 100*time.Millisecond
		if err := start(t, c).wait(t); !apierrors.IsForbidden(err) {
			t.Fatalf("Start returned %v, want a Forbidden error", err)
		}
	})
	if webhookURL(get(t, crdName(gk))) != "" {
		t.Error("a user without rights configured the conversion")
	}
}

// The shipped roles are enough: a user bound only to
// config/rbac/conversion.yaml's ClusterRole (which names the example's
// CRD) and webhooks.yaml's Role for the Lease applies the conversion and
// repairs a drift, and the API server refuses none of its requests.
func TestShippedRBAC(t *testing.T) {
	kopftest.NoLeaks(t)
	ns := env.Namespace(t)
	const name = "conversionexamples.kopf.dev"
	// The example CRD is shared with the test's other runs (-count):
	// without a conversion, and nobody's fields, it is as installed.
	patch(t, name, "reset", `{"metadata":{"managedFields":[{}]},"spec":{"conversion":{"strategy":"None","webhook":null}}}`)
	if webhookURL(get(t, name)) != "" {
		t.Fatal("the example CRD still has a webhook conversion")
	}
	bind(t, ns, "kopf-operator", roleOf(t, "config/rbac/conversion.yaml", "ClusterRole"), roleOf(t, "config/rbac/webhooks.yaml", "Role"))
	var seen requests
	c := conversions(t, seen.wrap(user(t, "kopf-operator")), urlConfig(t), schema.GroupKind{Group: group, Kind: "ConversionExample"})
	c.Namespace = ns
	start(t, c)
	// A refusal fails at once: waiting on would only time out.
	applied := func() bool {
		if n := seen.refused.Load(); n > 0 {
			t.Fatalf("the API server refused %d requests, the last: %v", n, seen.refusedWhat.Load())
		}
		return webhookURL(get(t, name)) == hookURL
	}
	kopftest.Eventually(t, "the conversion is applied", timeout, applied)
	patch(t, name, "kubectl-edit", `{"spec":{"conversion":{"strategy":"None","webhook":null}}}`)
	kopftest.Eventually(t, "the drift is repaired", timeout, applied)
	applied()
}

// user is the config of a new user of the control plane, in no group
// with rights: it may do what a test binds it to.
func user(t *testing.T, name string) *rest.Config {
	t.Helper()
	u, err := env.Environment().AddUser(envtest.User{Name: name}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return u.Config()
}

// roleOf reads the first object of a kind (ClusterRole or Role) from a
// manifest of the repository.
func roleOf(t *testing.T, file, kind string) client.Object {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testenv.Root(), filepath.FromSlash(file)))
	if err != nil {
		t.Fatal(err)
	}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			t.Fatalf("%s has no %s", file, kind)
		}
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		var obj client.Object
		switch {
		case meta.Kind != kind:
			continue
		case kind == "ClusterRole":
			obj = &rbacv1.ClusterRole{}
		default:
			obj = &rbacv1.Role{}
		}
		if err := yaml.Unmarshal(doc, obj); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		return obj
	}
}

// bind creates the roles (a Role in ns) and binds each to the user, all
// deleted when the test ends.
func bind(t *testing.T, ns, userName string, roles ...client.Object) {
	t.Helper()
	subject := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: userName}}
	for _, r := range roles {
		ref := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Name: r.GetName()}
		var binding client.Object
		if _, ok := r.(*rbacv1.ClusterRole); ok {
			ref.Kind = "ClusterRole"
			binding = &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: userName + "-" + r.GetName()}, Subjects: subject, RoleRef: ref}
		} else {
			r.SetNamespace(ns)
			ref.Kind = "Role"
			binding = &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: userName + "-" + r.GetName()}, Subjects: subject, RoleRef: ref}
		}
		testenv.Create(t, env.Client, r, binding)
	}
	// RBAC's authorizer reads the bindings from an informer: wait until
	// each grant is in effect, or the first request might be refused. A
	// verb every role must grant (get) tells; the others are the test's.
	for _, r := range roles {
		attrs := &authorizationv1.ResourceAttributes{Group: "coordination.k8s.io", Resource: "leases", Verb: "get", Namespace: ns}
		if _, ok := r.(*rbacv1.ClusterRole); ok {
			attrs = &authorizationv1.ResourceAttributes{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions", Verb: "get", Name: "conversionexamples.kopf.dev"}
		}
		kopftest.Eventually(t, "the grants of "+r.GetName()+" are in effect", timeout, func() bool {
			sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: userName, ResourceAttributes: attrs}}
			return env.Client.Create(context.Background(), sar) == nil && sar.Status.Allowed
		})
	}
}
