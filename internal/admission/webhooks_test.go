package admission

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/kopf-go/kopf/internal/registry"
)

var kexResource = schema.GroupVersionResource{Group: "kopf.dev", Version: "v1", Resource: "kopfexamples"}

func knownKex(*Kind) (schema.GroupVersionResource, bool) { return kexResource, true }

func TestWebhookName(t *testing.T) {
	tests := []struct{ id, want string }{
		{"id", "id.sfx"},
		{"id.", "id..sfx"},
		{"id-", "id-.sfx"},
		{"id_", "id-.sfx"},
		{"id!", "id21.sfx"},
		{"id%", "id25.sfx"},
		{"id/sub", "id.sub.sfx"},
		{"id/fld1.fld2", "id.fld1.fld2.sfx"},
		{"create_fn", "create-fn.sfx"},
		// Kopf keeps these, which the API server refuses in a name.
		{"Upper", "upper.sfx"},
		{"é", "c3a9.sfx"},
	}
	for _, tt := range tests {
		if got := WebhookName(tt.id, "sfx"); got != tt.want {
			t.Errorf("WebhookName(%q) = %q, want %q", tt.id, got, tt.want)
		}
	}
	if got := WebhookName("id", ""); got != "id" {
		t.Errorf("WebhookName without a suffix = %q, want id", got)
	}
}

func TestClientConfigIsSuffixed(t *testing.T) {
	tests := []struct{ id, wantURL, wantPath string }{
		{"id", "https://hostname/p1/p2/id", "p1/p2/id"},
		{"id.", "https://hostname/p1/p2/id.", "p1/p2/id."},
		{"id-", "https://hostname/p1/p2/id-", "p1/p2/id-"},
		{"id_", "https://hostname/p1/p2/id_", "p1/p2/id_"},
		{"id!", "https://hostname/p1/p2/id%21", "p1/p2/id%21"},
		{"id%", "https://hostname/p1/p2/id%25", "p1/p2/id%25"},
		{"id/sub", "https://hostname/p1/p2/id/sub", "p1/p2/id/sub"},
		{"id/fld1.fld2", "https://hostname/p1/p2/id/fld1.fld2", "p1/p2/id/fld1.fld2"},
	}
	for _, tt := range tests {
		byURL := Config{ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://hostname/p1/p2/")}}
		if got := *byURL.clientConfig(tt.id).URL; got != tt.wantURL {
			t.Errorf("url for %q = %q, want %q", tt.id, got, tt.wantURL)
		}
		byService := Config{ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Path: ptr.To("p1/p2")}}}
		if got := *byService.clientConfig(tt.id).Service.Path; got != tt.wantPath {
			t.Errorf("service path for %q = %q, want %q", tt.id, got, tt.wantPath)
		}
	}
	withPath := Config{Path: "/hooks/", ClientConfig: admissionregistrationv1.WebhookClientConfig{
		URL: ptr.To("https://host:9443"), CABundle: []byte("ca"),
	}}
	got := withPath.clientConfig("fn")
	if *got.URL != "https://host:9443/hooks/fn" || string(got.CABundle) != "ca" {
		t.Errorf("client config = %+v, want the path and the id after the URL, and the CA bundle", got)
	}
	if *withPath.ClientConfig.URL != "https://host:9443" {
		t.Error("the configured client config was changed")
	}
	noPath := Config{Path: "/hooks", ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Name: "svc"}}}
	if got := *noPath.clientConfig("fn").Service.Path; got != "/hooks/fn" {
		t.Errorf("service path = %q, want /hooks/fn", got)
	}
}

func TestWebhooks(t *testing.T) {
	_, k := kexKind()
	reg := &Registry{Kinds: []*Kind{k}}
	c := &calls{}
	c.add(k, Validating, "plain", nil)
	c.add(k, Validating, "tuned", nil, func(h *Handler) {
		h.Operations = []Operation{Create, Update}
		h.Subresource = "status"
		h.Persistent, h.SideEffects, h.IgnoreFailures = true, true, true
		h.Labels = map[string]registry.Filter{"somelabel": registry.Equals("somevalue"), "other": registry.Absent,
			"callable": registry.Check(func(any) bool { return true })}
	})
	c.add(k, Mutating, "any_sub", nil, func(h *Handler) { h.Subresource = "*" })
	config := Config{Name: "auto.kopf.dev", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://host")}}

	plain := admissionregistrationv1.ValidatingWebhook{
		Name:         "plain.auto.kopf.dev",
		ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://host/plain")},
		Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{"*"},
			Rule: admissionregistrationv1.Rule{APIGroups: []string{"kopf.dev"}, APIVersions: []string{"v1"},
				Resources: []string{"kopfexamples"}, Scope: ptr.To(admissionregistrationv1.ScopeType("*"))},
		}},
		FailurePolicy:           ptr.To(admissionregistrationv1.FailurePolicyType("Fail")),
		MatchPolicy:             ptr.To(admissionregistrationv1.MatchPolicyType("Equivalent")),
		SideEffects:             ptr.To(admissionregistrationv1.SideEffectClass("None")),
		TimeoutSeconds:          ptr.To[int32](30),
		AdmissionReviewVersions: []string{"v1", "v1beta1"},
	}
	tuned := admissionregistrationv1.ValidatingWebhook{
		Name:         "tuned.auto.kopf.dev",
		ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://host/tuned")},
		Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{"CREATE", "UPDATE"},
			Rule: admissionregistrationv1.Rule{APIGroups: []string{"kopf.dev"}, APIVersions: []string{"v1"},
				Resources: []string{"kopfexamples/status"}, Scope: ptr.To(admissionregistrationv1.ScopeType("*"))},
		}},
		FailurePolicy: ptr.To(admissionregistrationv1.FailurePolicyType("Ignore")),
		MatchPolicy:   ptr.To(admissionregistrationv1.MatchPolicyType("Equivalent")),
		ObjectSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "other", Operator: "DoesNotExist"},
			{Key: "somelabel", Operator: "In", Values: []string{"somevalue"}},
		}},
		SideEffects:             ptr.To(admissionregistrationv1.SideEffectClass("NoneOnDryRun")),
		TimeoutSeconds:          ptr.To[int32](30),
		AdmissionReviewVersions: []string{"v1", "v1beta1"},
	}
	anySub := admissionregistrationv1.MutatingWebhook{
		Name:         "any-sub.auto.kopf.dev",
		ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://host/any_sub")},
		Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{"*"},
			Rule: admissionregistrationv1.Rule{APIGroups: []string{"kopf.dev"}, APIVersions: []string{"v1"},
				Resources: []string{"kopfexamples/*"}, Scope: ptr.To(admissionregistrationv1.ScopeType("*"))},
		}},
		FailurePolicy:           ptr.To(admissionregistrationv1.FailurePolicyType("Fail")),
		MatchPolicy:             ptr.To(admissionregistrationv1.MatchPolicyType("Equivalent")),
		SideEffects:             ptr.To(admissionregistrationv1.SideEffectClass("None")),
		TimeoutSeconds:          ptr.To[int32](30),
		AdmissionReviewVersions: []string{"v1", "v1beta1"},
	}

	if diff := cmp.Diff([]admissionregistrationv1.ValidatingWebhook{plain, tuned}, config.ValidatingWebhooks(reg, knownKex, false)); diff != "" {
		t.Errorf("validating -want +got:\n%s", diff)
	}
	if diff := cmp.Diff([]admissionregistrationv1.MutatingWebhook{anySub}, config.MutatingWebhooks(reg, knownKex, false)); diff != "" {
		t.Errorf("mutating -want +got:\n%s", diff)
	}
	// On exit, only the persistent ones stay.
	if diff := cmp.Diff([]admissionregistrationv1.ValidatingWebhook{tuned}, config.ValidatingWebhooks(reg, knownKex, true)); diff != "" {
		t.Errorf("persistent validating -want +got:\n%s", diff)
	}
	if diff := cmp.Diff([]admissionregistrationv1.MutatingWebhook{}, config.MutatingWebhooks(reg, knownKex, true)); diff != "" {
		t.Errorf("persistent mutating -want +got:\n%s", diff)
	}
	// A kind that the API server does not serve yet: webhooks without rules.
	unknown := func(*Kind) (schema.GroupVersionResource, bool) { return schema.GroupVersionResource{}, false }
	for _, w := range config.ValidatingWebhooks(reg, unknown, false) {
		if len(w.Rules) != 0 {
			t.Errorf("%s has rules %v for an unknown resource", w.Name, w.Rules)
		}
	}
}
