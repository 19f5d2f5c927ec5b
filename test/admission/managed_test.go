package admission

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	acv1 "k8s.io/client-go/applyconfigurations/admissionregistration/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/handlers"
	"github.com/kopf-go/kopf/pkg/kopftest"
)

var (
	allValidating = []string{"kept.%s", "plain.%s"}
	allMutating   = []string{"mutated.%s"}
)

// named fills the configuration's name into the webhooks' names.
func named(format []string, name string) []string {
	out := []string{}
	for _, f := range format {
		out = append(out, fmt.Sprintf(f, name))
	}
	return out
}

// injectCA writes a caBundle into every webhook of both configurations as
// cert-manager's cainjector does: with an update (its default), or with a
// forced apply of its own (its ServerSideApply feature).
func injectCA(t *testing.T, name string, ca []byte, byApply bool) {
	t.Helper()
	ctx := context.Background()
	v, m := configurations(t, name)
	if byApply {
		va := acv1.ValidatingWebhookConfiguration(name)
		for _, w := range v.Webhooks {
			va.WithWebhooks(acv1.ValidatingWebhook().WithName(w.Name).WithClientConfig(acv1.WebhookClientConfig().WithCABundle(ca...)))
		}
		ma := acv1.MutatingWebhookConfiguration(name)
		for _, w := range m.Webhooks {
			ma.WithWebhooks(acv1.MutatingWebhook().WithName(w.Name).WithClientConfig(acv1.WebhookClientConfig().WithCABundle(ca...)))
		}
		for _, ac := range []any{va, ma} {
			var err error
			switch ac := ac.(type) {
			case *acv1.ValidatingWebhookConfigurationApplyConfiguration:
				err = k8s.Apply(ctx, ac, client.FieldOwner("cert-manager-cainjector"), client.ForceOwnership)
			case *acv1.MutatingWebhookConfigurationApplyConfiguration:
				err = k8s.Apply(ctx, ac, client.FieldOwner("cert-manager-cainjector"), client.ForceOwnership)
			}
			if err != nil {
				t.Fatalf("inject the CA by apply: %v", err)
			}
		}
		return
	}
	for i := range v.Webhooks {
		v.Webhooks[i].ClientConfig.CABundle = ca
	}
	for i := range m.Webhooks {
		m.Webhooks[i].ClientConfig.CABundle = ca
	}
	if err := k8s.Update(ctx, v, client.FieldOwner("cainjector")); err != nil {
		t.Fatalf("inject the CA: %v", err)
	}
	if err := k8s.Update(ctx, m, client.FieldOwner("cainjector")); err != nil {
		t.Fatalf("inject the CA: %v", err)
	}
}

// caBundles maps each webhook of both configurations to its caBundle.
func caBundles(t *testing.T, name string) map[string]string {
	t.Helper()
	v, m := configurations(t, name)
	out := map[string]string{}
	if v != nil {
		for _, w := range v.Webhooks {
			out[w.Name] = string(w.ClientConfig.CABundle)
		}
	}
	if m != nil {
		for _, w := range m.Webhooks {
			out[w.Name] = string(w.ClientConfig.CABundle)
		}
	}
	return out
}

// editTimeout sets a validating webhook's timeoutSeconds by hand.
func editTimeout(t *testing.T, name, webhook string, seconds int32) {
	t.Helper()
	v, _ := configurations(t, name)
	for i := range v.Webhooks {
		if v.Webhooks[i].Name == webhook {
			v.Webhooks[i].TimeoutSeconds = ptr.To(seconds)
		}
	}
	if err := k8s.Update(context.Background(), v, client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatalf("edit %s: %v", webhook, err)
	}
}

// timeout is a validating webhook's timeoutSeconds; 0 if absent.
func timeout(t *testing.T, name, webhook string) int32 {
	t.Helper()
	v, _ := configurations(t, name)
	if v == nil {
		return 0
	}
	for _, w := range v.Webhooks {
		if w.Name == webhook {
			return ptr.Deref(w.TimeoutSeconds, 0)
		}
	}
	return 0
}

// A CA bundle that cert-manager's cainjector injects, by an update or by
// an apply of its own, survives the operator's writes: the operator is
// given no CA bundle, and applies none. A re-apply (here after a hand
// edit) leaves it, and so does the cleanup, which deletes the
// non-persistent webhooks whole although the cainjector owns part of them.
func TestManagedKeepsAnInjectedCABundle(t *testing.T) {
	for _, tt := range []struct {
		name    string
		byApply bool
	}{{"injected by an update", false}, {"injected by an apply", true}} {
		t.Run(tt.name, func(t *testing.T) {
			kopftest.NoLeaks(t)
			const name = "cabundle.kopf.dev"
			deleteConfigurations(t, name)
			inject := map[string]string{"cert-manager.io/inject-ca-from": "operators/serving"}
			r := startReplica(t, "operator", cfg, managedTestRegistry(), handlers.WebhookOptions{Managed: name, Annotations: inject})
			waitForWebhooks(t, name, named(allValidating, name), named(allMutating, name))
			if v, m := configurations(t, name); !cmp.Equal(v.Annotations, inject) || !cmp.Equal(m.Annotations, inject) {
				t.Errorf("the annotations are %v and %v, want %v", v.Annotations, m.Annotations, inject)
			}
			if got := caBundles(t, name); !cmp.Equal(got, map[string]string{"kept." + name: "", "plain." + name: "", "mutated." + name: ""}) {
				t.Fatalf("the operator applied CA bundles: %v", got)
			}

			injectCA(t, name, []byte("the CA"), tt.byApply)
			editTimeout(t, name, "plain."+name, 5)
			kopftest.Eventually(t, "the hand edit reverted", 30*time.Second, func() bool { return timeout(t, name, "plain."+name) == 30 })
			want := map[string]string{"kept." + name: "the CA", "plain." + name: "the CA", "mutated." + name: "the CA"}
			if diff := cmp.Diff(want, caBundles(t, name)); diff != "" {
				t.Errorf("CA bundles after the re-apply -want +got:\n%s", diff)
			}

			if err := r.stop(); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(map[string]string{"kept." + name: "the CA"}, caBundles(t, name)); diff != "" {
				t.Errorf("CA bundles after the cleanup -want +got:\n%s", diff)
			}
			if errs := r.logs.errors(); len(errs) > 0 {
				t.Errorf("errors were logged: %q", errs)
			}
		})
	}
}

// Whatever someone else changes of what the operator applies is applied
// again: a field edited by hand, a webhook deleted by hand, an annotation
// removed, the whole configuration deleted. What the operator does not apply (a
// namespaceSelector added by hand) is left alone.
func TestManagedRepairsDrift(t *testing.T) {
	kopftest.NoLeaks(t)
	const name = "drift.kopf.dev"
	ctx := context.Background()
	deleteConfigurations(t, name)
	r := startReplica(t, "operator", cfg, managedTestRegistry(), handlers.WebhookOptions{Managed: name,
		Annotations: map[string]string{"example.com/managed-by": "kopf-go"}})
	validating, mutating := named(allValidating, name), named(allMutating, name)
	waitForWebhooks(t, name, validating, mutating)

	// A field edited, and one added, by hand.
	v, _ := configurations(t, name)
	for i := range v.Webhooks {
		if v.Webhooks[i].Name == "plain."+name {
			v.Webhooks[i].FailurePolicy = ptr.To(admissionregistrationv1.Ignore)
			v.Webhooks[i].NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}
		}
	}
	if err := k8s.Update(ctx, v, client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatal(err)
	}
	kopftest.Eventually(t, "the failure policy reverted", 30*time.Second, func() bool {
		v, _ := configurations(t, name)
		i := slices.IndexFunc(v.Webhooks, func(w admissionregistrationv1.ValidatingWebhook) bool { return w.Name == "plain."+name })
		return i >= 0 && ptr.Deref(v.Webhooks[i].FailurePolicy, "") == admissionregistrationv1.Fail
	})
	v, _ = configurations(t, name)
	i := slices.IndexFunc(v.Webhooks, func(w admissionregistrationv1.ValidatingWebhook) bool { return w.Name == "plain."+name })
	if got := v.Webhooks[i].NamespaceSelector; got == nil || got.MatchLabels["team"] != "a" {
		t.Errorf("the namespaceSelector added by hand is %v, want it kept", got)
	}

	// A webhook deleted by hand.
	_, m := configurations(t, name)
	m.Webhooks = nil
	if err := k8s.Update(ctx, m, client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatal(err)
	}
	waitForWebhooks(t, name, validating, mutating)

	// The annotation removed by hand.
	_, m = configurations(t, name)
	m.Annotations = nil
	if err := k8s.Update(ctx, m, client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatal(err)
	}
	kopftest.Eventually(t, "the annotation back", 30*time.Second, func() bool {
		_, m := configurations(t, name)
		return m.Annotations["example.com/managed-by"] == "kopf-go"
	})

	// The configuration deleted.
	v, _ = configurations(t, name)
	if err := k8s.Delete(ctx, v); err != nil {
		t.Fatal(err)
	}
	kopftest.Eventually(t, "the configuration created again", 30*time.Second, func() bool {
		again, _ := configurations(t, name)
		return again != nil && again.UID != v.UID && len(again.Webhooks) == 2
	})

	if got := len(r.logs.with("differs from the handlers' webhooks")); got < 4 {
		t.Errorf("%d drifts were logged, want one per change at least (4)", got)
	}
	if errs := r.logs.errors(); len(errs) > 0 {
		t.Errorf("errors were logged: %q", errs)
	}
}
