package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/kopf-go/kopf/handlers"
	"github.com/kopf-go/kopf/pkg/cause"
)

// renameSpecField is examples/19-conversion's converter body (the example
// is a main package, so it is copied): it moves spec.<from> to spec.<to>.
func renameSpecField(obj *unstructured.Unstructured, from, to string) error {
	value, found, err := unstructured.NestedFieldNoCopy(obj.Object, "spec", from)
	if err != nil || !found {
		return err
	}
	unstructured.RemoveNestedField(obj.Object, "spec", from)
	return unstructured.SetNestedField(obj.Object, value, "spec", to)
}

// conversionRegistry is examples/19-conversion's registry (the example
// is a main package, so it is copied here): create and update handlers on
// the kind in one version, and a converter each way between v1 and v2.
// The handlers count their calls, for the workloads that must not re-run
// them, and the v2->v1 converter its objects.
func conversionRegistry(version string, calls *conversionCalls) *handlers.Registry {
	reg := handlers.NewRegistry()
	cex := handlers.ForKind(reg, "kopf.dev", version, "ConversionExample")
	handlers.OnCreate(cex, "create_fn", func(context.Context, *unstructured.Unstructured, *cause.Change) (any, error) {
		calls.create.Add(1)
		return map[string]any{"message": "hello world"}, nil
	})
	handlers.OnUpdate(cex, "update_fn", func(context.Context, *unstructured.Unstructured, *cause.Change) (any, error) {
		calls.update.Add(1)
		return map[string]any{"message": "updated"}, nil
	})
	conv := handlers.ForConversion(reg, "kopf.dev", "ConversionExample")
	handlers.Converter(conv, "v1", "v2", func(_ context.Context, obj *unstructured.Unstructured) error {
		return renameSpecField(obj, "field", "value")
	})
	handlers.Converter(conv, "v2", "v1", func(_ context.Context, obj *unstructured.Unstructured) error {
		calls.toV1.Add(1)
		return renameSpecField(obj, "value", "field")
	})
	return reg
}

// conversionCalls count the example's handlers' calls, and the
// conversions of objects to v1.
type conversionCalls struct{ create, update, toV1 atomic.Int64 }

// conversionHandler is what the manager's webhook server runs for a
// ConversionReview of examples/19-conversion, once TLS is done: the
// registry goes through handlers.SetupWebhooksWithManager, as
// handlers.Run and SetupWithManager do, into a manager that is never
// started (so that it needs no API server), and the handler is the
// webhook server's mux, which routes <path>/convert to kopf-go's
// conversion server through controller-runtime's request metrics. The
// registry is thus built by handlers' own code (its conversionRegistry is
// unexported), and what users run is measured but the TLS connection, a
// cost per connection that the API server keeps alive, not per object.
func conversionHandler(tb testing.TB) http.Handler {
	tb.Helper()
	// No request reaches this address: the manager is not started, and
	// without Managed nothing writes the CRD. The self-signed certificate
	// asks the API server's for its names, which fails at once here.
	mgr, err := manager.New(&rest.Config{Host: "https://127.0.0.1:1"}, manager.Options{
		Logger:        logr.Discard(),
		Metrics:       metricsserver.Options{BindAddress: "0"},
		WebhookServer: webhook.NewServer(webhook.Options{Host: "127.0.0.1"}),
	})
	if err != nil {
		tb.Fatal(err)
	}
	var calls conversionCalls
	if err := handlers.SetupWebhooksWithManager(mgr, conversionRegistry("v1", &calls), handlers.WebhookOptions{SelfSigned: true}); err != nil {
		tb.Fatal(err)
	}
	return mgr.GetWebhookServer().(*webhook.DefaultServer).WebhookMux()
}

// storedConversionObject is ConversionExample number i as the API server
// sends it in a review when a client lists in v1: the whole object as
// stored in v2 after the example's operator handled it, with its
// managedFields, kopf's diff-base annotation and finalizer, and the
// handler's result in the status.
func storedConversionObject(i int) map[string]any {
	name := fmt.Sprintf("conv-%05d", i)
	value := "value of " + name
	return map[string]any{
		"apiVersion": "kopf.dev/v2", "kind": "ConversionExample",
		"metadata": map[string]any{
			"name": name, "namespace": "bench", "uid": fmt.Sprintf("7c0f3a52-8d1e-4b6a-9f2e-%012d", i),
			"resourceVersion": fmt.Sprint(100000 + i), "generation": int64(1), "creationTimestamp": "2025-01-01T00:00:00Z",
			"finalizers": []any{"kopf.zalando.org/KopfFinalizerMarker"},
			"annotations": map[string]any{
				"kopf.zalando.org/last-handled-configuration": `{"apiVersion":"kopf.dev/v1","spec":{"field":"` + value + `"}}`,
			},
			"managedFields": []any{
				map[string]any{"manager": "bench", "operation": "Update", "apiVersion": "kopf.dev/v2", "time": "2025-01-01T00:00:00Z",
					"fieldsType": "FieldsV1", "fieldsV1": map[string]any{"f:spec": map[string]any{".": map[string]any{}, "f:value": map[string]any{}}}},
				map[string]any{"manager": "kopf", "operation": "Update", "apiVersion": "kopf.dev/v1", "time": "2025-01-01T00:00:01Z",
					"fieldsType": "FieldsV1", "fieldsV1": map[string]any{"f:metadata": map[string]any{
						"f:annotations": map[string]any{".": map[string]any{}, "f:kopf.zalando.org/last-handled-configuration": map[string]any{}},
						"f:finalizers":  map[string]any{".": map[string]any{}, `v:"kopf.zalando.org/KopfFinalizerMarker"`: map[string]any{}},
					}}},
				map[string]any{"manager": "kopf", "operation": "Update", "apiVersion": "kopf.dev/v1", "time": "2025-01-01T00:00:01Z",
					"fieldsType": "FieldsV1", "subresource": "status", "fieldsV1": map[string]any{"f:status": map[string]any{
						".": map[string]any{}, "f:create_fn": map[string]any{".": map[string]any{}, "f:message": map[string]any{}},
					}}},
			},
		},
		"spec":   map[string]any{"value": value},
		"status": map[string]any{"create_fn": map[string]any{"message": "hello world"}},
	}
}

// conversionReviewBody is the JSON of a review of n stored objects to
// desiredAPIVersion kopf.dev/v1, as the API server sends it for a list.
func conversionReviewBody(tb testing.TB, n int) []byte {
	tb.Helper()
	review := apiextensionsv1.ConversionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "ConversionReview"},
		Request:  &apiextensionsv1.ConversionRequest{UID: "review-uid", DesiredAPIVersion: "kopf.dev/v1"},
	}
	for i := range n {
		raw, err := json.Marshal(storedConversionObject(i))
		if err != nil {
			tb.Fatal(err)
		}
		review.Request.Objects = append(review.Request.Objects, k8sruntime.RawExtension{Raw: raw})
	}
	body, err := json.Marshal(review)
	if err != nil {
		tb.Fatal(err)
	}
	return body
}

// serveConversionReview posts one review to the handler at
// handlers.ConversionPath and returns the recorded answer.
func serveConversionReview(srv http.Handler, body []byte) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, handlers.ConversionPath, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, req)
	return rec
}

// conversionReviewSizes are the objects per review: a get or a watch
// event (1), a page of a paginated list (100, 1,000) or a whole small
// list, all of which the API server sends in one review.
var conversionReviewSizes = []int{1, 100, 1000}

// BenchmarkConversionReview measures what serving one ConversionReview
// costs the operator: decoding it, running examples/19-conversion's v2->v1
// converter on each object and encoding the answer (docs/benchmarks.md,
// "Conversion webhooks"). Besides ns/op, B/op and allocs/op of the whole
// review, it reports them per object; those include the review's fixed
// part (the recorder, the request, the envelope) divided among its
// objects, which is what dominates a review of one.
func BenchmarkConversionReview(b *testing.B) {
	srv := conversionHandler(b)
	for _, n := range conversionReviewSizes {
		b.Run(fmt.Sprintf("objects=%d", n), func(b *testing.B) {
			body := conversionReviewBody(b, n)
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for b.Loop() {
				if rec := serveConversionReview(srv, body); rec.Code != http.StatusOK {
					b.Fatalf("HTTP %d: %s", rec.Code, rec.Body)
				}
			}
			runtime.ReadMemStats(&after)
			objects := float64(b.N * n)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/objects, "ns/object")
			b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/objects, "B/object")
			b.ReportMetric(float64(after.Mallocs-before.Mallocs)/objects, "allocs/object")
		})
	}
}

// TestConversionReviewWorkload serves the benchmark's review small, so
// that it cannot rot, and checks the answer as the API server would: a
// Success with the review's uid and every object in v1, spec.field
// holding what spec.value held, and the metadata untouched.
func TestConversionReviewWorkload(t *testing.T) {
	const n = 3
	rec := serveConversionReview(conversionHandler(t), conversionReviewBody(t, n))
	if rec.Code != http.StatusOK {
		t.Fatalf("HTTP %d: %s", rec.Code, rec.Body)
	}
	var review apiextensionsv1.ConversionReview
	if err := json.Unmarshal(rec.Body.Bytes(), &review); err != nil {
		t.Fatal(err)
	}
	resp := review.Response
	if resp == nil || resp.UID != "review-uid" || resp.Result.Status != metav1.StatusSuccess {
		t.Fatalf("the response is %+v, want a Success for review-uid", resp)
	}
	if len(resp.ConvertedObjects) != n {
		t.Fatalf("%d objects converted, want %d", len(resp.ConvertedObjects), n)
	}
	for i, raw := range resp.ConvertedObjects {
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(raw.Raw); err != nil {
			t.Fatal(err)
		}
		stored := &unstructured.Unstructured{Object: storedConversionObject(i)}
		spec, _ := obj.Object["spec"].(map[string]any)
		want := "value of " + stored.GetName()
		switch {
		case obj.GetAPIVersion() != "kopf.dev/v1" || obj.GetKind() != "ConversionExample":
			t.Errorf("object %d is a %s %s, want a kopf.dev/v1 ConversionExample", i, obj.GetAPIVersion(), obj.GetKind())
		case len(spec) != 1 || spec["field"] != want:
			t.Errorf("object %d has the spec %v, want {field: %q}", i, spec, want)
		case obj.GetUID() != stored.GetUID() || obj.GetResourceVersion() != stored.GetResourceVersion() ||
			len(obj.GetManagedFields()) != 3 || obj.GetAnnotations()["kopf.zalando.org/last-handled-configuration"] == "":
			t.Errorf("object %d's metadata changed: %v", i, obj.Object["metadata"])
		}
	}
}
