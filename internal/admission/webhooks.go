package admission

import (
	"fmt"
	"strings"
	"unicode/utf8"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/kopf-go/kopf/internal/registry"
)

// TimeoutSeconds is the webhooks' timeout: the most the API server allows.
const TimeoutSeconds = 30

// ReviewVersions are the AdmissionReview versions the server understands.
var ReviewVersions = []string{"v1", "v1beta1"}

// Config describes the managed webhook configurations.
type Config struct {
	// Name names both configuration objects and suffixes the webhooks'
	// names, e.g. "auto.kopf.dev".
	Name string
	// ClientConfig is how the API server reaches the webhook server's root:
	// a URL, or a service (whose path, if any, is the root), plus the CA
	// bundle. Path and "/<handler id>" are appended to it.
	ClientConfig admissionregistrationv1.WebhookClientConfig
	// Path is where the webhook server serves the handlers.
	Path string
	// Annotations are applied on both configurations.
	Annotations map[string]string
}

// Resources tells which resource a kind is, and whether it is known (a
// kind not served by the API server yet gets webhooks without rules).
type Resources func(*Kind) (schema.GroupVersionResource, bool)

// ValidatingWebhooks builds one webhook per validating handler; with
// persistentOnly, only the persistent ones (what stays after the operator
// exits).
func (c Config) ValidatingWebhooks(reg *Registry, resources Resources, persistentOnly bool) []admissionregistrationv1.ValidatingWebhook {
	out := []admissionregistrationv1.ValidatingWebhook{}
	c.each(reg, Validating, resources, persistentOnly, func(w admissionregistrationv1.ValidatingWebhook) {
		out = append(out, w)
	})
	return out
}

// MutatingWebhooks builds one webhook per mutating handler, as
// ValidatingWebhooks does.
func (c Config) MutatingWebhooks(reg *Registry, resources Resources, persistentOnly bool) []admissionregistrationv1.MutatingWebhook {
	out := []admissionregistrationv1.MutatingWebhook{}
	c.each(reg, Mutating, resources, persistentOnly, func(w admissionregistrationv1.ValidatingWebhook) {
		out = append(out, admissionregistrationv1.MutatingWebhook{
			Name: w.Name, ClientConfig: w.ClientConfig, Rules: w.Rules, FailurePolicy: w.FailurePolicy,
			MatchPolicy: w.MatchPolicy, NamespaceSelector: w.NamespaceSelector, ObjectSelector: w.ObjectSelector,
			SideEffects: w.SideEffects, TimeoutSeconds: w.TimeoutSeconds, AdmissionReviewVersions: w.AdmissionReviewVersions,
		})
	})
	return out
}

func (c Config) each(reg *Registry, t Type, resources Resources, persistentOnly bool, add func(admissionregistrationv1.ValidatingWebhook)) {
	for _, k := range reg.Kinds {
		gvr, known := resources(k)
		for _, h := range k.Handlers {
			if h.Type != t || persistentOnly && !h.Persistent {
				continue
			}
			add(c.webhook(h, gvr, known))
		}
	}
}

// webhook builds the entry of one handler, with Kopf's conventions.
func (c Config) webhook(h *Handler, gvr schema.GroupVersionResource, known bool) admissionregistrationv1.ValidatingWebhook {
	sideEffects := admissionregistrationv1.SideEffectClassNone
	if h.SideEffects {
		sideEffects = admissionregistrationv1.SideEffectClassNoneOnDryRun
	}
	failurePolicy := admissionregistrationv1.Fail
	if h.IgnoreFailures {
		failurePolicy = admissionregistrationv1.Ignore
	}
	rules := []admissionregistrationv1.RuleWithOperations{}
	if known {
		resource := gvr.Resource
		if h.Subresource != "" {
			resource += "/" + h.Subresource
		}
		operations := []admissionregistrationv1.OperationType{admissionregistrationv1.OperationAll}
		if len(h.Operations) > 0 {
			operations = nil
			for _, op := range h.Operations {
				operations = append(operations, admissionregistrationv1.OperationType(op))
			}
		}
		rules = append(rules, admissionregistrationv1.RuleWithOperations{
			Operations: operations,
			Rule: admissionregistrationv1.Rule{
				APIGroups:   []string{gvr.Group},
				APIVersions: []string{gvr.Version},
				Resources:   []string{resource},
				Scope:       ptr.To(admissionregistrationv1.AllScopes),
			},
		})
	}
	return admissionregistrationv1.ValidatingWebhook{
		Name:                    WebhookName(h.ID, c.Name),
		ClientConfig:            c.clientConfig(h.ID),
		Rules:                   rules,
		FailurePolicy:           &failurePolicy,
		MatchPolicy:             ptr.To(admissionregistrationv1.Equivalent),
		ObjectSelector:          registry.LabelSelector(h.Labels),
		SideEffects:             &sideEffects,
		TimeoutSeconds:          ptr.To[int32](TimeoutSeconds),
		AdmissionReviewVersions: ReviewVersions,
	}
}

// clientConfig points the client config at the handler: Path, then the id
// (URL-quoted, its slashes kept).
func (c Config) clientConfig(id string) admissionregistrationv1.WebhookClientConfig {
	cc := *c.ClientConfig.DeepCopy()
	suffix := strings.TrimRight(c.Path, "/") + "/" + QuoteID(id)
	if cc.URL != nil {
		cc.URL = ptr.To(strings.TrimRight(*cc.URL, "/") + suffix)
	}
	if cc.Service != nil {
		cc.Service.Path = ptr.To(ptr.Deref(cc.Service.Path, "") + suffix)
	}
	return cc
}

// WebhookName is the name of a handler's webhook: the id with "/" as "."
// and "_" as "-", other characters that a DNS subdomain does not allow as
// the hex of their UTF-8 bytes (as Kopf does), lowercased, then
// ".<suffix>".
func WebhookName(id, suffix string) string {
	var b strings.Builder
	for _, r := range strings.NewReplacer("/", ".", "_", "-").Replace(id) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '.', r == '-':
			b.WriteRune(r)
		case r >= 'A' && r <= 'Z':
			b.WriteRune(r - 'A' + 'a')
		default:
			buf := make([]byte, utf8.RuneLen(r))
			utf8.EncodeRune(buf, r)
			fmt.Fprintf(&b, "%x", buf)
		}
	}
	if suffix == "" {
		return b.String()
	}
	return b.String() + "." + suffix
}

// QuoteID quotes a handler id for a URL path as Python's urllib.parse.quote
// does: letters, digits, "_.-~" and "/" stay, other bytes become %XX.
func QuoteID(id string) string {
	var b strings.Builder
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9',
			c == '_', c == '.', c == '-', c == '~', c == '/':
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}
