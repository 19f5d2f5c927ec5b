package admission

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/kopf-go/kopf/handlers"
	"github.com/kopf-go/kopf/pkg/cause"
	"github.com/kopf-go/kopf/pkg/kopftest"
	"github.com/kopf-go/kopf/test/testenv"
)

// conversionCRD is examples/19-conversion's CRD, which TestMain installs
// without a conversion.
const conversionCRD = "conversionexamples.kopf.dev"

// conversionCounts are what the conversion operator's functions were
// called for.
type conversionCounts struct{ created, toV1, toV2 atomic.Int64 }

// conversionRegistry is examples/19-conversion's operator for v1 (its
// create handler and its two converters), counting the calls.
func conversionRegistry(counts *conversionCounts) *handlers.Registry {
	reg := handlers.NewRegistry()
	cex := handlers.ForKind(reg, "kopf.dev", "v1", "ConversionExample")
	handlers.OnCreate(cex, "create_fn", func(context.Context, *unstructured.Unstructured, *cause.Change) (any, error) {
		counts.created.Add(1)
		return map[string]any{"message": "hello world"}, nil
	})
	rename := func(obj *unstructured.Unstructured, from, to string) error {
		value, found, err := unstructured.NestedFieldNoCopy(obj.Object, "spec", from)
		if err != nil || !found {
			return err
		}
		unstructured.RemoveNestedField(obj.Object, "spec", from)
		return unstructured.SetNestedField(obj.Object, value, "spec", to)
	}
	conv := handlers.ForConversion(reg, "kopf.dev", "ConversionExample")
	handlers.Converter(conv, "v1", "v2", func(_ context.Context, obj *unstructured.Unstructured) error {
		counts.toV2.Add(1)
		return rename(obj, "field", "value")
	})
	handlers.Converter(conv, "v2", "v1", func(_ context.Context, obj *unstructured.Unstructured) error {
		counts.toV1.Add(1)
		return rename(obj, "value", "field")
	})
	return reg
}

// startConversionOperator runs the whole engine (handlers.SetupWithManager)
// for the registry in one namespace, its conversion webhook served on
// envtest's local serving port under /kopf, and the CRD's conversion
// managed; the returned function stops it and waits until it has.
func startConversionOperator(t *testing.T, ns string, reg *handlers.Registry) func() {
	t.Helper()
	mgr, clientConfig := testenv.WebhookManager(t, cfg, env.WebhookInstallOptions, manager.Options{})
	err := handlers.SetupWithManager(mgr, reg, handlers.Options{
		Namespaces: []string{ns}, Standalone: true,
		Webhooks: handlers.WebhookOptions{Path: "/kopf", Managed: managed, ClientConfig: clientConfig},
	})
	if err != nil {
		t.Fatal(err)
	}
	return testenv.RunManager(t, mgr)
}

// conversionExample is a ConversionExample in a version, without a spec.
func conversionExample(ns, name, version string) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(schema.GroupVersionKind{Group: "kopf.dev", Version: version, Kind: "ConversionExample"})
	obj.SetNamespace(ns)
	obj.SetName(name)
	return obj
}

// conversionWritten tells whether the CRD's conversion is the webhook at
// /kopf/convert on envtest's serving port, with envtest's CA.
func conversionWritten(t *testing.T) bool {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Name: conversionCRD}, crd); err != nil {
		t.Fatal(err)
	}
	opts := env.WebhookInstallOptions
	want := "https://" + net.JoinHostPort(opts.LocalServingHost, strconv.Itoa(opts.LocalServingPort)) + "/kopf" + handlers.ConversionPath
	c := crd.Spec.Conversion
	return c != nil && c.Strategy == apiextensionsv1.WebhookConverter && c.Webhook != nil && c.Webhook.ClientConfig != nil &&
		c.Webhook.ClientConfig.URL != nil && *c.Webhook.ClientConfig.URL == want &&
		string(c.Webhook.ClientConfig.CABundle) == string(opts.LocalServingCAData)
}

// awaitConversion waits until the API server converts through the
// webhook: a dry run in v1 goes to v2 (stored) and back, and keeps its
// spec.field only if both conversions ran.
func awaitConversion(t *testing.T, ns string) {
	t.Helper()
	kopftest.Eventually(t, "the API server converts through the webhook", time.Minute, func() bool {
		probe := conversionExample(ns, "conv-probe", "v1")
		probe.Object["spec"] = map[string]any{"field": "probe"}
		if err := k8s.Create(context.Background(), probe, client.DryRunAll); err != nil {
			return false
		}
		field, _, _ := unstructured.NestedString(probe.Object, "spec", "field")
		return field == "probe"
	})
}

// TestConversionWebhookStopsClean runs an operator with converters and its
// conversion webhook behind the API server: objects created in v2 reach
// its watch in v1 and are handled once each, a list in v1 holds each
// object's spec.value as spec.field, converted by its v2->v1 converter;
// then it stops, and none of its goroutines (the webhook server's, the
// managed conversion's watch of the CRDs, the engine's) is left running.
func TestConversionWebhookStopsClean(t *testing.T) {
	kopftest.NoLeaks(t) // first: its check runs after every stop below
	ctx := context.Background()
	ns := namespace(t)
	var counts conversionCounts
	if !conversionWritten(t) {
		// The watches an operator starts before its conversion takes
		// effect may serve objects converted without it
		// (docs/conversion.md, "First start"): the first operator of the
		// package only writes the conversion. It must stop clean too.
		stop := startConversionOperator(t, ns, conversionRegistry(&counts))
		kopftest.Eventually(t, "the operator writes the CRD's conversion", time.Minute, func() bool { return conversionWritten(t) })
		awaitConversion(t, ns)
		stop()
	}
	stop := startConversionOperator(t, ns, conversionRegistry(&counts))
	awaitConversion(t, ns)
	const n = 3
	for i := range n {
		obj := conversionExample(ns, fmt.Sprintf("conv-%d", i), "v2")
		obj.Object["spec"] = map[string]any{"value": fmt.Sprintf("value %d", i)}
		if err := k8s.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	kopftest.Eventually(t, "create_fn stores its message on every object", time.Minute, func() bool {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(schema.GroupVersionKind{Group: "kopf.dev", Version: "v2", Kind: "ConversionExampleList"})
		if err := k8s.List(ctx, list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		handled := 0
		for _, o := range list.Items {
			if msg, _, _ := unstructured.NestedString(o.Object, "status", "create_fn", "message"); msg == "hello world" {
				handled++
			}
		}
		return handled == n
	})
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(schema.GroupVersionKind{Group: "kopf.dev", Version: "v1", Kind: "ConversionExampleList"})
	if err := k8s.List(ctx, list, client.InNamespace(ns)); err != nil {
		t.Fatalf("list in v1: %v", err)
	}
	if len(list.Items) != n {
		t.Fatalf("the list in v1 has %d objects, want %d", len(list.Items), n)
	}
	for _, o := range list.Items {
		var i int
		if _, err := fmt.Sscanf(o.GetName(), "conv-%d", &i); err != nil {
			t.Fatal(err)
		}
		if spec, _ := o.Object["spec"].(map[string]any); o.GetAPIVersion() != "kopf.dev/v1" || len(spec) != 1 || spec["field"] != fmt.Sprintf("value %d", i) {
			t.Errorf("%s in v1 is a %s with the spec %v, want {field: %q}", o.GetName(), o.GetAPIVersion(), spec, fmt.Sprintf("value %d", i))
		}
	}
	stop()
	if got := counts.created.Load(); got != n {
		t.Errorf("create_fn ran %d times, want once per object (%d)", got, n)
	}
	// The objects were written in v2 and read in v1: without the v2->v1
	// converter's calls, the list could not hold spec.field.
	if counts.toV1.Load() < n {
		t.Errorf("the v2->v1 converter converted %d objects, want %d at least", counts.toV1.Load(), n)
	}
}
