package managed

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	acv1 "k8s.io/client-go/applyconfigurations/admissionregistration/v1"

	"github.com/kopf-go/kopf/internal/admission"
)

// FieldManager is the field manager under which kopf-go applies the
// managed webhook configurations with server-side apply: the fields it
// applies are its own, and whatever another manager writes beside them
// (cert-manager's cainjector its caBundle, a user a namespaceSelector) is
// left alone (docs/admission.md, "Managed configurations").
const FieldManager = "kopf-go"

// Applied is what one write applies: both configurations, as apply
// configurations.
type Applied struct {
	Validating *acv1.ValidatingWebhookConfigurationApplyConfiguration
	Mutating   *acv1.MutatingWebhookConfigurationApplyConfiguration
}

// ApplyConfigurations builds both configurations' apply configurations:
// one webhook per handler (with persistentOnly, per persistent handler).
// Each holds only the fields that the handler sets: an optional field left
// at its zero (a caBundle when the operator is given no CA, a selector
// without label filters) is not applied, so that it stays with whoever
// else writes it.
func ApplyConfigurations(c admission.Config, reg *admission.Registry, resources admission.Resources, persistentOnly bool) (Applied, error) {
	a := Applied{
		Validating: acv1.ValidatingWebhookConfiguration(c.Name),
		Mutating:   acv1.MutatingWebhookConfiguration(c.Name),
	}
	if len(c.Annotations) > 0 {
		a.Validating.WithAnnotations(c.Annotations)
		a.Mutating.WithAnnotations(c.Annotations)
	}
	// The typed webhooks' JSON holds only the fields set: every optional
	// field of theirs omits its zero, as an apply configuration must.
	if err := convert(c.ValidatingWebhooks(reg, resources, persistentOnly), &a.Validating.Webhooks); err != nil {
		return a, err
	}
	if err := convert(c.MutatingWebhooks(reg, resources, persistentOnly), &a.Mutating.Webhooks); err != nil {
		return a, err
	}
	return a, nil
}

// convert re-types a value through its JSON.
func convert(from, into any) error {
	data, err := json.Marshal(from)
	if err != nil {
		return fmt.Errorf("encode the webhooks: %w", err)
	}
	if err := json.Unmarshal(data, into); err != nil {
		return fmt.Errorf("decode the webhooks: %w", err)
	}
	return nil
}

// Plan is what a write must do to one configuration as read.
type Plan struct {
	// Stale are the webhooks that FieldManager owns in the configuration
	// but does not apply any more. They are deleted whole before the
	// apply: an apply that leaves them out would keep whatever another
	// manager owns of them (a cainjector's caBundle and the webhook's
	// name), which the API server refuses as a webhook without a client
	// config.
	Stale []string
	// Drifted are the webhooks to apply whose fields, as FieldManager owns
	// them, differ from what it applies: missing (never applied, deleted,
	// or taken over by another manager) or changed.
	Drifted []string
	// Annotations: the annotations FieldManager owns differ from those it
	// applies.
	Annotations bool
	// Absent: the configuration does not exist.
	Absent bool
}

// Apply reports whether the configuration must be applied.
func (p Plan) Apply() bool {
	return p.Absent || p.Annotations || len(p.Stale) > 0 || len(p.Drifted) > 0
}

// Content is what a configuration holds of what the operator applies:
// its webhooks, as JSON objects, and its annotations.
type Content struct {
	Webhooks    []map[string]any  `json:"webhooks"`
	Annotations map[string]string `json:"-"`
}

// PlanOf compares what FieldManager owns of a configuration (extracted
// from its managed fields; the zero Content if the configuration is
// absent) with what it applies. The order of the webhooks does not
// matter: the list is a map by name.
func PlanOf(owned, applied Content, absent bool) Plan {
	have, want := byName(owned.Webhooks), byName(applied.Webhooks)
	p := Plan{Absent: absent, Annotations: !maps.Equal(owned.Annotations, applied.Annotations)}
	for name := range have {
		if _, ok := want[name]; !ok {
			p.Stale = append(p.Stale, name)
		}
	}
	for name, w := range want {
		if h, ok := have[name]; !ok || h != w {
			p.Drifted = append(p.Drifted, name)
		}
	}
	slices.Sort(p.Stale)
	slices.Sort(p.Drifted)
	return p
}

// byName maps webhooks to their canonical JSON (maps' keys sorted).
func byName(webhooks []map[string]any) map[string]string {
	out := map[string]string{}
	for _, w := range webhooks {
		name, _ := w["name"].(string)
		data, err := json.Marshal(w)
		if err != nil {
			data = nil // cannot happen with decoded JSON; counts as drifted
		}
		out[name] = string(data)
	}
	return out
}

// ContentOf returns what an (apply) configuration holds of what the
// operator applies.
func ContentOf(config any) (Content, error) {
	data, err := json.Marshal(config)
	if err != nil {
		return Content{}, fmt.Errorf("encode the configuration: %w", err)
	}
	var decoded struct {
		Content
		Metadata struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(data, &decoded); err != nil {
		return Content{}, fmt.Errorf("decode the configuration: %w", err)
	}
	c := decoded.Content
	if len(decoded.Metadata.Annotations) > 0 {
		c.Annotations = decoded.Metadata.Annotations
	}
	return c, nil
}

// ownedValidating is what FieldManager owns of a validating configuration
// as read.
func ownedValidating(live *admissionregistrationv1.ValidatingWebhookConfiguration) (Content, error) {
	ac, err := acv1.ExtractValidatingWebhookConfiguration(live, FieldManager)
	if err != nil {
		return Content{}, fmt.Errorf("read the fields of %s in %s: %w", FieldManager, live.Name, err)
	}
	return ContentOf(ac)
}

// ownedMutating is what FieldManager owns of a mutating configuration as
// read.
func ownedMutating(live *admissionregistrationv1.MutatingWebhookConfiguration) (Content, error) {
	ac, err := acv1.ExtractMutatingWebhookConfiguration(live, FieldManager)
	if err != nil {
		return Content{}, fmt.Errorf("read the fields of %s in %s: %w", FieldManager, live.Name, err)
	}
	return ContentOf(ac)
}

// deletion is the strategic merge patch that deletes webhooks whole, by
// name, whoever owns their fields.
func deletion(names []string) ([]byte, error) {
	items := make([]map[string]string, 0, len(names))
	for _, n := range names {
		items = append(items, map[string]string{"name": n, "$patch": "delete"})
	}
	data, err := json.Marshal(map[string]any{"webhooks": items})
	if err != nil {
		return nil, fmt.Errorf("encode the deletion of webhooks: %w", err)
	}
	return data, nil
}
