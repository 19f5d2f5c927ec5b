package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kopf-go/kopf/internal/admission"
	"github.com/kopf-go/kopf/internal/registry"
)

// BenchmarkAdmissionReview measures what one large review costs the
// webhook server: an update of a KopfExample whose old and new objects
// make a body of about 6.5 MiB (the limit is 7 MiB), served by three
// validating handlers, and by two mutating ones besides. Besides the
// allocations per review it reports live-MiB: the heap that the review
// holds while its last handler runs (which reads its object), after a
// garbage collection. That figure times the bound on concurrent reviews
// is what a burst of the largest reviews holds at once.
func BenchmarkAdmissionReview(b *testing.B) {
	body := largeReview(b, 48000)
	for _, mutators := range []int{0, 2} {
		b.Run(fmt.Sprintf("validators=3/mutators=%d", mutators), func(b *testing.B) {
			benchmarkReview(b, body, mutators)
		})
	}
}

func benchmarkReview(b *testing.B, body []byte, mutators int) {
	kind := &admission.Kind{
		GVK:       schema.GroupVersionKind{Group: "kopf.dev", Version: "v1", Kind: "KopfExample"},
		NewObject: func() registry.Object { return &unstructured.Unstructured{} },
	}
	reg := &admission.Registry{Kinds: []*admission.Kind{kind}}
	var live uint64
	read := func(_ context.Context, obj registry.Object, r *admission.Request) error {
		if obj.GetName() == "" {
			return errors.New("no name")
		}
		return nil
	}
	// The last handler measures the heap while it holds its object.
	measure := func(ctx context.Context, obj registry.Object, r *admission.Request) error {
		var stats runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&stats)
		live = stats.HeapAlloc
		r.Patch.SetLabel("kopf.dev/checked", "yes")
		return read(ctx, obj, r)
	}
	types := []admission.Type{admission.Validating, admission.Validating, admission.Validating}
	for range mutators {
		types = append(types, admission.Mutating)
	}
	for i, t := range types {
		fn := read
		if i == len(types)-1 {
			fn = measure
		}
		kind.Handlers = append(kind.Handlers, &admission.Handler{ID: fmt.Sprintf("h%d", i), Type: t, Fn: fn})
	}
	srv := &admission.Server{Registry: reg, Logger: logr.Discard()}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	var liveSum float64
	for b.Loop() {
		b.StopTimer()
		runtime.GC()
		var base runtime.MemStats // the body is held already
		runtime.ReadMemStats(&base)
		req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		b.StartTimer()
		srv.ServeHTTP(rec, req)
		b.StopTimer()
		if rec.Code != http.StatusOK {
			b.Fatalf("HTTP %d: %s", rec.Code, rec.Body)
		}
		liveSum += (float64(live) - float64(base.HeapAlloc)) / (1 << 20) // signed: a GC may have run meanwhile
		b.StartTimer()
	}
	b.ReportMetric(liveSum/float64(b.N), "live-MiB")
}

// largeReview is the JSON of an update review of a KopfExample with that
// many items in its spec, in the old and the new object alike but for one.
func largeReview(b *testing.B, items int) []byte {
	b.Helper()
	object := func(changed string) []byte {
		list := make([]any, items)
		for i := range list {
			list[i] = map[string]any{"name": fmt.Sprintf("item-%06d", i), "value": "some value of a usual length", "n": int64(i)}
		}
		obj := map[string]any{
			"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
			"metadata": map[string]any{"name": "kopf-example", "namespace": "default", "labels": map[string]any{"somelabel": "somevalue"}},
			"spec":     map[string]any{"field": changed, "items": list},
		}
		data, err := json.Marshal(obj)
		if err != nil {
			b.Fatal(err)
		}
		return data
	}
	review := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID:       "uid1",
			Kind:      metav1.GroupVersionKind{Group: "kopf.dev", Version: "v1", Kind: "KopfExample"},
			Resource:  metav1.GroupVersionResource{Group: "kopf.dev", Version: "v1", Resource: "kopfexamples"},
			UserInfo:  authenticationv1.UserInfo{Username: "user1"},
			Name:      "kopf-example",
			Namespace: "default",
			Operation: admissionv1.Update,
		},
	}
	review.Request.Object.Raw = object("new")
	review.Request.OldObject.Raw = object("old")
	data, err := json.Marshal(review)
	if err != nil {
		b.Fatal(err)
	}
	return data
}

// TestAdmissionReviewWorkload runs the benchmark small, so that it cannot
// rot: a review that the server does not answer with 200 fails the
// benchmark, which then reports no iterations.
func TestAdmissionReviewWorkload(t *testing.T) {
	for _, mutators := range []int{0, 2} {
		var body []byte
		r := testing.Benchmark(func(b *testing.B) {
			body = largeReview(b, 100)
			benchmarkReview(b, body, mutators)
		})
		if r.N == 0 || len(body) == 0 {
			t.Errorf("mutators=%d: the review was not served (%d iterations)", mutators, r.N)
		}
	}
}
