package managed

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/kopf-go/kopf/internal/admission"
	"github.com/kopf-go/kopf/internal/registry"
)

// asJSON is v's JSON decoded into plain maps, as the API server reads it.
func asJSON(t *testing.T, v any) map[string]any {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func jsonOf(t *testing.T, text string) map[string]any {
	t.Helper()
	var out map[string]any
	if err := json.Unmarshal([]byte(text), &out); err != nil {
		t.Fatalf("%v in %s", err, text)
	}
	return out
}

// What is applied: only the fields the handlers set. Without a CA bundle
// there is no caBundle at all (an empty one would take the field from a
// cainjector), without label filters no objectSelector, without a known
// resource no rules; and when cleaning up, only the persistent webhooks.
func TestApplyConfigurations(t *testing.T) {
	reg, k := kexKind()
	addWebhook(k, admission.Validating, "plain")
	addWebhook(k, admission.Validating, "keep", func(h *admission.Handler) {
		h.Persistent = true
		h.Labels = map[string]registry.Filter{"tier": registry.Equals("gold")}
	})
	addWebhook(k, admission.Mutating, "mutate")
	url := admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://host")}
	service := admissionregistrationv1.WebhookClientConfig{
		Service:  &admissionregistrationv1.ServiceReference{Namespace: "operators", Name: "op"},
		CABundle: []byte("CA"),
	}
	unknown := func(*admission.Kind) (schema.GroupVersionResource, bool) { return schema.GroupVersionResource{}, false }
	const rules = `"rules": [{"apiGroups": ["kopf.dev"], "apiVersions": ["v1"], "resources": ["kopfexamples"], "operations": ["*"], "scope": "*"}]`
	const common = `"failurePolicy": "Fail", "matchPolicy": "Equivalent", "sideEffects": "None", "timeoutSeconds": 30, "admissionReviewVersions": ["v1", "v1beta1"]`
	const keepSelector = `"objectSelector": {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["gold"]}]}`
	tests := []struct {
		name           string
		client         admissionregistrationv1.WebhookClientConfig
		resources      admission.Resources
		persistentOnly bool
		validating     string
		mutating       string
		annotations    map[string]string
	}{
		{"a URL and no CA bundle", url, knownKex, false,
			`[{"name": "plain.auto.kopf.dev", "clientConfig": {"url": "https://host/plain"}, ` + rules + `, ` + common + `},
			  {"name": "keep.auto.kopf.dev", "clientConfig": {"url": "https://host/keep"}, ` + rules + `, ` + keepSelector + `, ` + common + `}]`,
			`[{"name": "mutate.auto.kopf.dev", "clientConfig": {"url": "https://host/mutate"}, ` + rules + `, ` + common + `}]`, nil},
		{"a service and a CA bundle", service, knownKex, false,
			`[{"name": "plain.auto.kopf.dev", "clientConfig": {"service": {"namespace": "operators", "name": "op", "path": "/plain"}, "caBundle": "Q0E="}, ` + rules + `, ` + common + `},
			  {"name": "keep.auto.kopf.dev", "clientConfig": {"service": {"namespace": "operators", "name": "op", "path": "/keep"}, "caBundle": "Q0E="}, ` + rules + `, ` + keepSelector + `, ` + common + `}]`,
			`[{"name": "mutate.auto.kopf.dev", "clientConfig": {"service": {"namespace": "operators", "name": "op", "path": "/mutate"}, "caBundle": "Q0E="}, ` + rules + `, ` + common + `}]`, nil},
		{"a kind not served yet", url, unknown, false,
			`[{"name": "plain.auto.kopf.dev", "clientConfig": {"url": "https://host/plain"}, ` + common + `},
			  {"name": "keep.auto.kopf.dev", "clientConfig": {"url": "https://host/keep"}, ` + keepSelector + `, ` + common + `}]`,
			`[{"name": "mutate.auto.kopf.dev", "clientConfig": {"url": "https://host/mutate"}, ` + common + `}]`, nil},
		{"cleaning up", url, knownKex, true,
			`[{"name": "keep.auto.kopf.dev", "clientConfig": {"url": "https://host/keep"}, ` + rules + `, ` + keepSelector + `, ` + common + `}]`,
			``, nil},
		{"annotations", url, knownKex, true,
			`[{"name": "keep.auto.kopf.dev", "clientConfig": {"url": "https://host/keep"}, ` + rules + `, ` + keepSelector + `, ` + common + `}]`,
			``, map[string]string{"cert-manager.io/inject-ca-from": "operators/serving"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			config := admission.Config{Name: "auto.kopf.dev", ClientConfig: tt.client, Annotations: tt.annotations}
			a, err := ApplyConfigurations(config, reg, tt.resources, tt.persistentOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct {
				kind, webhooks string
				got            any
			}{
				{"ValidatingWebhookConfiguration", tt.validating, a.Validating},
				{"MutatingWebhookConfiguration", tt.mutating, a.Mutating},
			} {
				metadata := `{"name": "auto.kopf.dev"}`
				if tt.annotations != nil {
					metadata = `{"name": "auto.kopf.dev", "annotations": {"cert-manager.io/inject-ca-from": "operators/serving"}}`
				}
				want := `{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "` + c.kind + `", "metadata": ` + metadata
				if c.webhooks != "" {
					want += `, "webhooks": ` + c.webhooks
				}
				if diff := cmp.Diff(jsonOf(t, want+"}"), asJSON(t, c.got)); diff != "" {
					t.Errorf("%s -want +got:\n%s", c.kind, diff)
				}
			}
		})
	}
}

func TestPlanOf(t *testing.T) {
	w := func(name, url string, extra ...string) map[string]any {
		text := `{"name": "` + name + `", "clientConfig": {"url": "` + url + `"}`
		for _, e := range extra {
			text += ", " + e
		}
		var out map[string]any
		if err := json.Unmarshal([]byte(text+"}"), &out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	a, b := w("a.x.dev", "https://a"), w("b.x.dev", "https://b")
	type hooks = []map[string]any
	tests := []struct {
		name           string
		owned, applied Content
		absent         bool
		want           Plan
		apply          bool
	}{
		{"absent", Content{}, Content{Webhooks: hooks{a}}, true, Plan{Absent: true, Drifted: []string{"a.x.dev"}}, true},
		{"absent and nothing to apply", Content{}, Content{}, true, Plan{Absent: true}, true},
		{"as applied", Content{Webhooks: hooks{a, b}}, Content{Webhooks: hooks{a, b}}, false, Plan{}, false},
		{"in another order", Content{Webhooks: hooks{b, a}}, Content{Webhooks: hooks{a, b}}, false, Plan{}, false},
		{"a value edited", Content{Webhooks: hooks{w("a.x.dev", "https://elsewhere"), b}}, Content{Webhooks: hooks{a, b}}, false,
			Plan{Drifted: []string{"a.x.dev"}}, true},
		{"a field taken over by another manager", Content{Webhooks: hooks{a, w("b.x.dev", "https://b")}},
			Content{Webhooks: hooks{a, w("b.x.dev", "https://b", `"failurePolicy": "Fail"`)}}, false, Plan{Drifted: []string{"b.x.dev"}}, true},
		{"a webhook deleted", Content{Webhooks: hooks{a}}, Content{Webhooks: hooks{a, b}}, false, Plan{Drifted: []string{"b.x.dev"}}, true},
		{"a webhook no longer applied", Content{Webhooks: hooks{a, b}}, Content{Webhooks: hooks{a}}, false, Plan{Stale: []string{"b.x.dev"}}, true},
		{"nothing owned any more", Content{}, Content{Webhooks: hooks{a}}, false, Plan{Drifted: []string{"a.x.dev"}}, true},
		{"annotations as applied", Content{Webhooks: hooks{a}, Annotations: map[string]string{"k": "v"}},
			Content{Webhooks: hooks{a}, Annotations: map[string]string{"k": "v"}}, false, Plan{}, false},
		{"an annotation removed", Content{Webhooks: hooks{a}}, Content{Webhooks: hooks{a}, Annotations: map[string]string{"k": "v"}}, false,
			Plan{Annotations: true}, true},
		{"an annotation no longer applied", Content{Webhooks: hooks{a}, Annotations: map[string]string{"k": "v"}}, Content{Webhooks: hooks{a}}, false,
			Plan{Annotations: true}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := PlanOf(tt.owned, tt.applied, tt.absent)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("PlanOf() -want +got:\n%s", diff)
			}
			if got.Apply() != tt.apply {
				t.Errorf("Apply() = %v, want %v", got.Apply(), tt.apply)
			}
		})
	}
}

// The deletion of stale webhooks is a strategic merge patch by name.
func TestDeletion(t *testing.T) {
	got, err := deletion([]string{"a.x.dev", "b.x.dev"})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"webhooks":[{"$patch":"delete","name":"a.x.dev"},{"$patch":"delete","name":"b.x.dev"}]}`
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("deletion() -want +got:\n%s", diff)
	}
}

// What FieldManager owns of a configuration as read is what its managed
// fields say, not what the configuration holds: a caBundle written by
// another manager is not ours.
func TestOwnedWebhooks(t *testing.T) {
	live := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	live.Name = "x.dev"
	live.Webhooks = []admissionregistrationv1.ValidatingWebhook{{Name: "a.x.dev", ClientConfig: admissionregistrationv1.WebhookClientConfig{
		URL: ptr.To("https://a"), CABundle: []byte("CA")}}}
	if err := json.Unmarshal([]byte(`[
		{"manager": "kopf-go", "operation": "Apply", "apiVersion": "admissionregistration.k8s.io/v1", "fieldsType": "FieldsV1",
		 "fieldsV1": {"f:webhooks": {"k:{\"name\":\"a.x.dev\"}": {".": {}, "f:name": {}, "f:clientConfig": {"f:url": {}}}}}},
		{"manager": "cainjector", "operation": "Update", "apiVersion": "admissionregistration.k8s.io/v1", "fieldsType": "FieldsV1",
		 "fieldsV1": {"f:webhooks": {"k:{\"name\":\"a.x.dev\"}": {"f:clientConfig": {"f:caBundle": {}}}}}}
	]`), &live.ManagedFields); err != nil {
		t.Fatal(err)
	}
	got, err := ownedValidating(live)
	if err != nil {
		t.Fatal(err)
	}
	want := Content{Webhooks: []map[string]any{{"name": "a.x.dev", "clientConfig": map[string]any{"url": "https://a"}}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ownedValidating() -want +got:\n%s", diff)
	}
}
