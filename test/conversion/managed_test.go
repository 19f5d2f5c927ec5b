package conversion

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kopf-go/kopf/internal/conversion/managed"
	"github.com/kopf-go/kopf/pkg/kopftest"
)

// A CRD without a conversion gets the operator's: strategy Webhook, the
// URL and CA bundle, conversionReviewVersions [v1], owned by kopf-go
// through a server-side apply.
func TestApplied(t *testing.T) {
	kopftest.NoLeaks(t)
	gk := newCRD(t, kindOf("ConvApplied"))
	name := crdName(gk)
	if c := get(t, name).Spec.Conversion; c != nil && c.Strategy != apiextensionsv1.NoneConverter {
		t.Fatalf("the new CRD already has a conversion: %+v", c)
	}
	cc := urlConfig(t)
	c := conversions(t, env.Config, cc, gk)
	start(t, c)
	kopftest.Eventually(t, "the CRD's conversion points at the webhook", timeout, func() bool { return webhookURL(get(t, name)) == hookURL })

	conv := get(t, name).Spec.Conversion
	if !bytes.Equal(conv.Webhook.ClientConfig.CABundle, cc.CABundle) {
		t.Errorf("caBundle: got %q, want the CA's PEM", conv.Webhook.ClientConfig.CABundle)
	}
	if !slices.Equal(conv.Webhook.ConversionReviewVersions, []string{"v1"}) {
		t.Errorf("conversionReviewVersions: got %v, want [v1]", conv.Webhook.ConversionReviewVersions)
	}
	owned := fields(get(t, name), managed.FieldManager, metav1.ManagedFieldsOperationApply)
	for _, f := range []string{`"f:conversion"`, `"f:strategy"`, `"f:url"`, `"f:caBundle"`, `"f:conversionReviewVersions"`} {
		if !strings.Contains(owned, f) {
			t.Errorf("the fields applied by %s lack %s: %s", managed.FieldManager, f, owned)
		}
	}
	if c.Written() < 1 {
		t.Errorf("Written() = %d after the CRD's conversion was applied", c.Written())
	}
}

// A hand edit of the conversion is put back. The watch of the CRD drives
// it, not the retry interval: with an interval of an hour, the repair of
// each edit must come from the watch's event.
func TestDriftRepaired(t *testing.T) {
	kopftest.NoLeaks(t)
	gk := newCRD(t, kindOf("ConvDrift"))
	name := crdName(gk)
	c := conversions(t, env.Config, urlConfig(t), gk)
	c.RetryInterval = time.Hour
	start(t, c)
	kopftest.Eventually(t, "the conversion is applied", timeout, func() bool { return webhookURL(get(t, name)) == hookURL })

	// strategy None must come without a webhook: the API server refuses
	// one set beside it.
	patch(t, name, "kubectl-edit", `{"spec":{"conversion":{"strategy":"None","webhook":null}}}`)
	kopftest.Eventually(t, "strategy None is put back to Webhook", timeout, func() bool { return webhookURL(get(t, name)) == hookURL })

	patch(t, name, "kubectl-edit", `{"spec":{"conversion":{"webhook":{"clientConfig":{"url":"https://elsewhere.example/convert"}}}}}`)
	kopftest.Eventually(t, "another URL is put back", timeout, func() bool { return webhookURL(get(t, name)) == hookURL })
}

// With cert-manager, the operator applies an empty caBundle's annotation
// and never the bundle: the cainjector's bundle stays across a re-apply.
func TestCertManagerBundleLeftAlone(t *testing.T) {
	kopftest.NoLeaks(t)
	gk := newCRD(t, kindOf("ConvCertManager"))
	name := crdName(gk)
	u := hookURL
	c := conversions(t, env.Config, admissionregistrationv1.WebhookClientConfig{URL: &u}, gk)
	const inject = "cert-manager.io/inject-ca-from"
	c.Annotations = map[string]string{inject: "operators/kopf-webhook"}
	start(t, c)
	kopftest.Eventually(t, "the conversion is applied", timeout, func() bool { return webhookURL(get(t, name)) == hookURL })
	crd := get(t, name)
	if got := crd.Annotations[inject]; got != "operators/kopf-webhook" {
		t.Errorf("annotation %s: got %q", inject, got)
	}
	if b := crd.Spec.Conversion.Webhook.ClientConfig.CABundle; len(b) != 0 {
		t.Errorf("the operator wrote a caBundle it was not given: %q", b)
	}

	injected := caBundle(t)
	patch(t, name, "cainjector", `{"spec":{"conversion":{"webhook":{"clientConfig":{"caBundle":"`+b64(injected)+`"}}}}}`)
	before := c.Written()
	// A drift of the URL forces a re-apply; the bundle must survive it.
	patch(t, name, "kubectl-edit", `{"spec":{"conversion":{"webhook":{"clientConfig":{"url":"https://elsewhere.example/convert"}}}}}`)
	kopftest.Eventually(t, "the URL is put back", timeout, func() bool { return webhookURL(get(t, name)) == hookURL && c.Written() > before })
	crd = get(t, name)
	if got := crd.Spec.Conversion.Webhook.ClientConfig.CABundle; !bytes.Equal(got, injected) {
		t.Errorf("the cainjector's caBundle did not survive the re-apply: got %q", got)
	}
	if owned := fields(crd, "cainjector", metav1.ManagedFieldsOperationUpdate); !strings.Contains(owned, `"f:caBundle"`) {
		t.Errorf("the cainjector no longer owns the caBundle: %s", owned)
	}
	if owned := fields(crd, managed.FieldManager, metav1.ManagedFieldsOperationApply); strings.Contains(owned, `"f:caBundle"`) || !strings.Contains(owned, `"f:`+inject+`"`) {
		t.Errorf("%s should own the annotation and not the caBundle: %s", managed.FieldManager, owned)
	}
}

// When the runnable stops, the conversion stays: without it the API
// server would serve stored objects unconverted.
func TestConversionStaysOnStop(t *testing.T) {
	kopftest.NoLeaks(t)
	gk := newCRD(t, kindOf("ConvStop"))
	name := crdName(gk)
	c := conversions(t, env.Config, urlConfig(t), gk)
	r := start(t, c)
	kopftest.Eventually(t, "the conversion is applied", timeout, func() bool { return webhookURL(get(t, name)) == hookURL })
	if err := r.stop(t); err != nil {
		t.Fatalf("Start: %v", err)
	}
	if got := webhookURL(get(t, name)); got != hookURL {
		t.Errorf("after the stop the CRD's conversion points at %q, want %q", got, hookURL)
	}
	if owned := fields(get(t, name), managed.FieldManager, metav1.ManagedFieldsOperationApply); !strings.Contains(owned, `"f:conversion"`) {
		t.Errorf("after the stop %s no longer owns the conversion: %s", managed.FieldManager, owned)
	}
}
