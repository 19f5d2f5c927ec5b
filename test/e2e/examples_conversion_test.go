package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/test/testenv"
)

// conversionCRD is the name of 19-conversion's CRD, which the package's
// control plane installs from the example's crd.yaml, without a
// conversion.
const conversionCRD = "conversionexamples.kopf.dev"

// conversionExampleCRD is the example's crd.yaml.
func conversionExampleCRD() string {
	return filepath.Join(testenv.Root(), "examples", "19-conversion", "crd.yaml")
}

// TestConversionExample runs 19-conversion registered for v1 with its
// webhook server on 127.0.0.1 and a self-signed CA: it makes the CRD's
// conversion its own (and keeps it when it stops), watches only once the
// API server converts through it (objects stored in v2 before its first
// start are seen whole in v1), objects created in v1 read back in v2 and
// v1 unchanged, and its create handler runs once per object. Then the CRD
// stores v1 instead of v2 and the operator restarts registered for v2:
// neither the create nor the update handler runs again for the objects
// that only the version changed, and a real change runs the update
// handler once.
func TestConversionExample(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t)
	names := []string{"conv-1", "conv-2", "conv-3"}
	start := func(version string) *operator {
		port := extraFreePort(t)
		return startWithEnv(t, "19-conversion", ns, []string{"TMPDIR=" + t.TempDir(), "KUBERNETES_SERVICE_HOST="},
			"--webhook-host=127.0.0.1", fmt.Sprintf("--webhook-port=%d", port), "--handle-version="+version)
	}

	// Objects stored in v2 before the operator's first start: its watch
	// in v1 waits until the API server converts them through its webhook
	// (without, v2's spec.value would be pruned from them in v1, and
	// create_fn would see an empty spec).
	for _, name := range names[:2] {
		obj := conversionObject(ns, name, "v2")
		obj.Object["spec"] = map[string]any{"value": "value of " + name}
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatalf("create %s in v2: %v", name, err)
		}
	}
	op := start("v1")
	op.waitFor(t, "the operator writes the CRD's conversion", func() bool {
		conv := conversionOf(t)
		return conv != nil && conv.Strategy == apiextensionsv1.WebhookConverter && conv.Webhook != nil &&
			conv.Webhook.ClientConfig != nil && len(conv.Webhook.ClientConfig.CABundle) > 0 &&
			conv.Webhook.ClientConfig.URL != nil && strings.HasSuffix(*conv.Webhook.ClientConfig.URL, "/convert")
	})
	if got := conversionOf(t).Webhook.ConversionReviewVersions; len(got) != 1 || got[0] != "v1" {
		t.Errorf("conversionReviewVersions %q, want [v1]", got)
	}
	op.waitForLine(t, "The API server converts the kind through the webhook: watching it now.")
	// An object created in v1 is stored in v2 through the webhook. (A
	// dry run in v1 goes to v2 and back: until the API server takes the
	// conversion up, it would prune v1's spec.field.)
	op.waitFor(t, "the API server converts through the webhook", func() bool {
		probe := conversionObject(ns, "conv-probe", "v1")
		probe.Object["spec"] = map[string]any{"field": "probe"}
		if err := env.Client.Create(ctx, probe, client.DryRunAll); err != nil {
			return false
		}
		field, _, _ := unstructured.NestedString(probe.Object, "spec", "field")
		return field == "probe"
	})
	for _, name := range names[2:] {
		obj := conversionObject(ns, name, "v1")
		obj.Object["spec"] = map[string]any{"field": "value of " + name}
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatalf("create %s in v1: %v", name, err)
		}
	}
	for _, name := range names {
		checkConverted(t, ns, name, "value of "+name)
		op.waitFor(t, "create_fn stores its message on "+name, func() bool {
			return conversionMessage(t, ns, name, "create_fn") == "hello world"
		})
	}
	op.stop(t)
	if got := op.count("And here we are! Creating"); got != len(names) {
		t.Errorf("create_fn ran %d times, want once per object (%d)", got, len(names))
	}
	if got := op.count("Updating conv-"); got != 0 {
		t.Errorf("update_fn ran %d times without a change", got)
	}
	for _, name := range names {
		if want := "Creating: map[field:value of " + name + "]"; op.count(want) != 1 {
			t.Errorf("create_fn did not see %s's spec.field in v1: want the line %q", name, want)
		}
	}
	if conversionOf(t) == nil || conversionOf(t).Strategy != apiextensionsv1.WebhookConverter {
		t.Errorf("the conversion is removed on stop: %+v", conversionOf(t))
	}

	// The CRD stores v1 from now on; the objects are rewritten in v1.
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: conversionCRD}, crd); err != nil {
		t.Fatal(err)
	}
	for i := range crd.Spec.Versions {
		crd.Spec.Versions[i].Storage = crd.Spec.Versions[i].Name == "v1"
	}
	if err := env.Client.Update(ctx, crd); err != nil {
		t.Fatalf("store v1: %v", err)
	}

	op = start("v2")
	// A new object's creation comes after the listed objects: once its
	// create handler ran, the operator has seen the others.
	fresh := conversionObject(ns, "conv-fresh", "v2")
	fresh.Object["spec"] = map[string]any{"value": "fresh"}
	op.waitFor(t, "the API server converts through the restarted webhook", func() bool {
		return env.Client.Create(ctx, fresh) == nil
	})
	op.waitFor(t, "create_fn stores its message on conv-fresh", func() bool {
		return conversionMessage(t, ns, "conv-fresh", "create_fn") == "hello world"
	})
	changed := conversionObject(ns, names[0], "v2")
	patch := []byte(`{"spec": {"value": "changed"}}`)
	if err := env.Client.Patch(ctx, changed, client.RawPatch("application/merge-patch+json", patch)); err != nil {
		t.Fatalf("change %s: %v", names[0], err)
	}
	op.waitFor(t, "update_fn stores its message on "+names[0], func() bool {
		return conversionMessage(t, ns, names[0], "update_fn") == "updated"
	})
	checkConverted(t, ns, names[0], "changed")
	op.stop(t)
	if got := op.count("And here we are! Creating"); got != 1 {
		t.Errorf("after the restart, create_fn ran %d times, want once (the new object)", got)
	}
	if got := op.count("Updating conv-"); got != 1 {
		t.Errorf("after the restart, update_fn ran %d times, want once (the changed object)", got)
	}
	for _, name := range names[1:] {
		if msg := conversionMessage(t, ns, name, "update_fn"); msg != "" {
			t.Errorf("update_fn ran on %s, which only changed versions", name)
		}
	}
}

// conversionOf is the CRD's spec.conversion.
func conversionOf(t *testing.T) *apiextensionsv1.CustomResourceConversion {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Name: conversionCRD}, crd); err != nil {
		t.Fatalf("get the CRD: %v", err)
	}
	return crd.Spec.Conversion
}

// conversionObject is a ConversionExample in a version, without a spec.
func conversionObject(namespace, name, version string) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(schema.GroupVersionKind{Group: "kopf.dev", Version: version, Kind: "ConversionExample"})
	obj.SetNamespace(namespace)
	obj.SetName(name)
	return obj
}

// checkConverted asserts that the object reads as spec.value in v2 and
// spec.field in v1, the same string, and nothing else in the spec.
func checkConverted(t *testing.T, namespace, name, want string) {
	t.Helper()
	for version, field := range map[string]string{"v1": "field", "v2": "value"} {
		obj := conversionObject(namespace, name, version)
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
			t.Errorf("get %s in %s: %v", name, version, err)
			continue
		}
		if spec, _ := obj.Object["spec"].(map[string]any); len(spec) != 1 || spec[field] != want {
			t.Errorf("%s in %s has the spec %v, want {%s: %q}", name, version, obj.Object["spec"], field, want)
		}
	}
}

// conversionMessage is the object's status.<handler>.message, read in v2.
func conversionMessage(t *testing.T, namespace, name, handler string) string {
	t.Helper()
	obj := conversionObject(namespace, name, "v2")
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
		t.Fatalf("get %s: %v", name, err)
	}
	msg, _, _ := unstructured.NestedString(obj.Object, "status", handler, "message")
	return msg
}
