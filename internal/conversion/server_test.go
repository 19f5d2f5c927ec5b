package conversion

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// serverOf serves the hub-and-spoke kind plus a v2->v1 that panics, and
// collects its log lines.
func serverOf(lines *[]string) *Server {
	k := hubAndSpoke()
	k.Converters = append(k.Converters, &Converter{From: "v2", To: "v1",
		Fn: func(context.Context, *unstructured.Unstructured) error { panic("boom") }})
	log := funcr.New(func(prefix, args string) { *lines = append(*lines, args) }, funcr.Options{})
	return &Server{Registry: &Registry{Kinds: []*Kind{k}}, Logger: log}
}

// reviewOf encodes a ConversionReview as the API server sends it.
func reviewOf(t *testing.T, desired string, objs ...*unstructured.Unstructured) []byte {
	t.Helper()
	review := apiextensionsv1.ConversionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "ConversionReview"},
		Request:  &apiextensionsv1.ConversionRequest{UID: "uid-1", DesiredAPIVersion: desired},
	}
	for _, o := range objs {
		data, err := json.Marshal(o.Object)
		if err != nil {
			t.Fatal(err)
		}
		review.Request.Objects = append(review.Request.Objects, runtime.RawExtension{Raw: data})
	}
	data, err := json.Marshal(review)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// post serves one request and decodes the answer as the API server does.
func post(t *testing.T, s *Server, body []byte, contentType string) (*httptest.ResponseRecorder, *apiextensionsv1.ConversionReview) {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/convert", bytes.NewReader(body))
	req.Header.Set("Content-Type", contentType)
	w := httptest.NewRecorder()
	s.ServeHTTP(w, req)
	if w.Code != http.StatusOK {
		return w, nil
	}
	var review apiextensionsv1.ConversionReview
	if err := json.Unmarshal(w.Body.Bytes(), &review); err != nil {
		t.Fatalf("decode the response: %v\n%s", err, w.Body)
	}
	return w, &review
}

func TestServeConverts(t *testing.T) {
	var lines []string
	s := serverOf(&lines)
	_, review := post(t, s, reviewOf(t, "kopf.dev/v3",
		object("kopf.dev/v1", map[string]any{"field": "a"}),
		object("kopf.dev/v3", map[string]any{"three": "b"})), "application/json")
	if review == nil || review.Response == nil {
		t.Fatal("no review in the response")
	}
	if review.APIVersion != "apiextensions.k8s.io/v1" || review.Kind != "ConversionReview" || review.Response.UID != "uid-1" {
		t.Errorf("response's review = %s %s uid %s", review.APIVersion, review.Kind, review.Response.UID)
	}
	if review.Response.Result.Status != metav1.StatusSuccess {
		t.Fatalf("result = %+v, want Success", review.Response.Result)
	}
	var got []map[string]any
	for _, raw := range review.Response.ConvertedObjects {
		var m map[string]any
		if err := json.Unmarshal(raw.Raw, &m); err != nil {
			t.Fatal(err)
		}
		got = append(got, m)
	}
	want := []map[string]any{
		object("kopf.dev/v3", map[string]any{"three": "a"}).Object,
		object("kopf.dev/v3", map[string]any{"three": "b"}).Object,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("converted objects -want +got:\n%s", diff)
	}
}

func TestServeFailures(t *testing.T) {
	for _, tc := range []struct {
		name    string
		review  func(*testing.T) []byte
		message string
		logged  string
	}{{
		name: "panicking converter",
		review: func(t *testing.T) []byte {
			return reviewOf(t, "kopf.dev/v1", object("kopf.dev/v1", map[string]any{"field": "a"}), object("kopf.dev/v2", map[string]any{"value": "b"}))
		},
		message: "convert ConversionExample.kopf.dev ns/one from v2 to v1: converter v2->v1 failed: panic: boom",
		logged:  `"msg"="Converter panicked; the conversion fails."`,
	}, {
		name:    "no path",
		review:  func(t *testing.T) []byte { return reviewOf(t, "kopf.dev/v2", object("kopf.dev/v9", nil)) },
		message: "convert ConversionExample.kopf.dev ns/one from v9 to v2: no converter or chain of converters of ConversionExample.kopf.dev converts v9 to v2",
		logged:  `"msg"="Conversion failed."`,
	}, {
		name: "unknown kind",
		review: func(t *testing.T) []byte {
			o := object("kopf.dev/v1", nil)
			o.SetKind("Other")
			return reviewOf(t, "kopf.dev/v2", o)
		},
		message: "convert Other.kopf.dev ns/one to v2: the operator has no converters for the kind",
		logged:  `"msg"="Conversion failed."`,
	}, {
		name:    "bad desired version",
		review:  func(t *testing.T) []byte { return reviewOf(t, "a/b/c", object("kopf.dev/v1", nil)) },
		message: `the desired apiVersion "a/b/c" is not a group/version`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var lines []string
			_, review := post(t, serverOf(&lines), tc.review(t), "application/json")
			if review == nil || review.Response == nil {
				t.Fatal("no review in the response")
			}
			r := review.Response
			if r.Result.Status != metav1.StatusFailure || r.Result.Message != tc.message || len(r.ConvertedObjects) != 0 {
				t.Errorf("result = %+v with %d objects, want Failure %q and none", r.Result, len(r.ConvertedObjects), tc.message)
			}
			if tc.logged != "" && !strings.Contains(strings.Join(lines, "\n"), tc.logged) {
				t.Errorf("log lines %q lack %s", lines, tc.logged)
			}
		})
	}
}

func TestServeRefusesBadCalls(t *testing.T) {
	var lines []string
	s := serverOf(&lines)
	s.MaxBytes = 1024
	good := reviewOf(t, "kopf.dev/v2", object("kopf.dev/v1", map[string]any{"field": "a"}))
	large := reviewOf(t, "kopf.dev/v2", object("kopf.dev/v1", map[string]any{"field": strings.Repeat("x", 2048)}))
	for _, tc := range []struct {
		name, method, contentType string
		body                      []byte
		chunked                   bool
		want                      int
	}{
		{"get", http.MethodGet, "application/json", good, false, http.StatusMethodNotAllowed},
		{"empty", http.MethodPost, "application/json", nil, false, http.StatusBadRequest},
		{"not json", http.MethodPost, "text/plain", good, false, http.StatusBadRequest},
		{"undecodable", http.MethodPost, "application/json", []byte("{"), false, http.StatusBadRequest},
		{"no request", http.MethodPost, "application/json", []byte(`{"kind":"ConversionReview"}`), false, http.StatusBadRequest},
		{"too large, announced", http.MethodPost, "application/json", large, false, http.StatusRequestEntityTooLarge},
		{"too large, unannounced", http.MethodPost, "application/json", large, true, http.StatusRequestEntityTooLarge},
		{"good", http.MethodPost, "application/json", good, false, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(tc.method, "/convert", bytes.NewReader(tc.body))
			if tc.chunked {
				req.ContentLength = -1
			}
			req.Header.Set("Content-Type", tc.contentType)
			w := httptest.NewRecorder()
			s.ServeHTTP(w, req)
			if w.Code != tc.want {
				t.Errorf("code = %d (%s), want %d", w.Code, strings.TrimSpace(w.Body.String()), tc.want)
			}
		})
	}
}
