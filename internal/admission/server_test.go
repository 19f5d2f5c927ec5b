package admission

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// post sends a review to the server and decodes the answer.
func post(t *testing.T, srv *httptest.Server, path string, review any, header http.Header) (int, map[string]any) {
	t.Helper()
	body, err := json.Marshal(review)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, srv.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = header.Clone()
	if req.Header == nil {
		req.Header = http.Header{}
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

func TestServerRoutesByID(t *testing.T) {
	defer goleak.VerifyNone(t)
	reg, k := kexKind()
	c := &calls{}
	c.add(k, Validating, "reject", func(*Request) error { return Error{Message: "I'm too lazy anyway. Go away!", Code: 555} })
	c.add(k, Validating, "warn", func(r *Request) error { r.Warn("user-agent: " + r.Headers.Get("User-Agent")); return nil })
	c.add(k, Mutating, "inject", func(r *Request) error { r.Patch.Set(123, "spec", "injected"); return nil })
	c.add(k, Mutating, "fn/spec.field", nil)
	srv := httptest.NewServer(&Server{Registry: reg, Prefix: "/hooks"})
	defer srv.Close()
	review := func() admissionv1.AdmissionReview {
		return admissionv1.AdmissionReview{
			TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
			Request:  admissionRequest(t, Create, kexBody(), nil),
		}
	}

	code, got := post(t, srv, "/hooks/reject", review(), nil)
	want := map[string]any{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": map[string]any{
		"uid": "uid1", "allowed": false, "status": map[string]any{"metadata": map[string]any{}, "message": "I'm too lazy anyway. Go away!", "code": 555.0},
	}}
	if diff := cmp.Diff(want, got); code != http.StatusOK || diff != "" {
		t.Errorf("reject: HTTP %d, review -want +got:\n%s", code, diff)
	}

	code, got = post(t, srv, "/hooks/warn", review(), http.Header{"User-Agent": {"kube-apiserver-admission"}})
	want = map[string]any{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": map[string]any{
		"uid": "uid1", "allowed": true, "warnings": []any{"user-agent: kube-apiserver-admission"},
	}}
	if diff := cmp.Diff(want, got); code != http.StatusOK || diff != "" {
		t.Errorf("warn: HTTP %d, review -want +got:\n%s", code, diff)
	}

	code, got = post(t, srv, "/hooks/inject", review(), nil)
	response, _ := got["response"].(map[string]any)
	encoded, _ := response["patch"].(string)
	decoded, err := base64.StdEncoding.DecodeString(encoded)
	if code != http.StatusOK || err != nil || response["patchType"] != "JSONPatch" ||
		string(decoded) != `[{"op":"add","path":"/spec/injected","value":123}]` {
		t.Errorf("inject: HTTP %d, response %v, patch %s (%v); want a base64 JSONPatch adding /spec/injected", code, response, decoded, err)
	}

	if code, _ := post(t, srv, "/hooks/fn/spec.field", review(), nil); code != http.StatusOK {
		t.Errorf("an id with a slash: HTTP %d", code)
	}
	if diff := cmp.Diff([]string{"reject", "warn", "inject", "fn/spec.field"}, c.IDs()); diff != "" {
		t.Errorf("called -want +got:\n%s", diff)
	}
}

func TestServerEchoesTheReviewVersion(t *testing.T) {
	reg, k := kexKind()
	(&calls{}).add(k, Validating, "v", nil)
	srv := httptest.NewServer(&Server{Registry: reg})
	defer srv.Close()
	review := map[string]any{"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview",
		"request": admissionRequest(t, Create, kexBody(), nil)}
	code, got := post(t, srv, "/v", review, nil)
	if code != http.StatusOK || got["apiVersion"] != "admission.k8s.io/v1beta1" || got["kind"] != "AdmissionReview" {
		t.Errorf("HTTP %d, review %v; want v1beta1 back", code, got)
	}
}

func TestServerErrors(t *testing.T) {
	reg, k := kexKind()
	(&calls{}).add(k, Validating, "v", nil)
	ambiguous := &Registry{Kinds: []*Kind{k, {GVK: kexGVK, NewObject: k.NewObject}}}
	good := map[string]any{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": admissionRequest(t, Create, kexBody(), nil)}
	unknown := admissionRequest(t, Create, kexBody(), nil)
	unknown.Kind.Kind = "Other"
	noUser := admissionRequest(t, Create, kexBody(), nil)
	noUser.UserInfo.Username, noUser.UserInfo.UID, noUser.UserInfo.Groups = "", "", nil
	tests := []struct {
		name        string
		reg         *Registry
		method      string
		path        string
		contentType string
		body        io.Reader
		want        int
	}{
		{"fine", reg, http.MethodPost, "/hooks/v", "", nil, http.StatusOK},
		{"json with a charset", reg, http.MethodPost, "/hooks/v", "application/json; charset=utf-8", nil, http.StatusOK},
		{"not a POST", reg, http.MethodGet, "/hooks/v", "", nil, http.StatusMethodNotAllowed},
		{"outside the prefix", reg, http.MethodPost, "/other/v", "", nil, http.StatusNotFound},
		{"no content type", reg, http.MethodPost, "/hooks/v", "-", nil, http.StatusBadRequest},
		{"another content type", reg, http.MethodPost, "/hooks/v", "application/yaml", nil, http.StatusBadRequest},
		{"a malformed content type", reg, http.MethodPost, "/hooks/v", "application/json; =", nil, http.StatusBadRequest},
		{"an empty body", reg, http.MethodPost, "/hooks/v", "", strings.NewReader(""), http.StatusBadRequest},
		{"too large", reg, http.MethodPost, "/hooks/v", "", bytes.NewReader(largeReview(t, MaxReviewBytes+1)), http.StatusRequestEntityTooLarge},
		{"too large, of no declared length", reg, http.MethodPost, "/hooks/v", "", io.MultiReader(bytes.NewReader(largeReview(t, MaxReviewBytes+1))), http.StatusRequestEntityTooLarge},
		{"as large as allowed", reg, http.MethodPost, "/hooks/v", "", bytes.NewReader(largeReview(t, MaxReviewBytes)), http.StatusOK},
		{"not JSON", reg, http.MethodPost, "/hooks/v", "", strings.NewReader("{"), http.StatusBadRequest},
		{"not a review", reg, http.MethodPost, "/hooks/v", "", strings.NewReader(`{"request": "yes"}`), http.StatusBadRequest},
		{"no request", reg, http.MethodPost, "/hooks/v", "", strings.NewReader(`{"apiVersion":"admission.k8s.io/v1"}`), http.StatusBadRequest},
		{"no user", reg, http.MethodPost, "/hooks/v", "", strings.NewReader(mustJSON(t, map[string]any{"request": noUser})), http.StatusBadRequest},
		{"an object that is not an object", reg, http.MethodPost, "/hooks/v", "", strings.NewReader(`{"request": {"object": [1]}}`), http.StatusBadRequest},
		{"an unknown resource", reg, http.MethodPost, "/hooks/v", "", strings.NewReader(mustJSON(t, map[string]any{"request": unknown})), http.StatusNotFound},
		{"an ambiguous resource", ambiguous, http.MethodPost, "/hooks/v", "", nil, http.StatusConflict},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mux := http.NewServeMux()
			mux.Handle("/", &Server{Registry: tt.reg, Prefix: "/hooks"})
			srv := httptest.NewServer(mux)
			defer srv.Close()
			body := tt.body
			if body == nil {
				body = strings.NewReader(mustJSON(t, good))
			}
			req, err := http.NewRequest(tt.method, srv.URL+tt.path, body)
			if err != nil {
				t.Fatal(err)
			}
			switch tt.contentType {
			case "":
				req.Header.Set("Content-Type", "application/json")
			case "-":
			default:
				req.Header.Set("Content-Type", tt.contentType)
			}
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Errorf("HTTP %d, want %d", resp.StatusCode, tt.want)
			}
		})
	}
}

// largeReview is a review of a KopfExample whose body is size bytes in
// all, padded with a long annotation.
func largeReview(t *testing.T, size int) []byte {
	t.Helper()
	body := kexBody()
	body["metadata"].(m)["annotations"] = m{"padding": ""}
	review := map[string]any{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": admissionRequest(t, Create, body, nil)}
	short := len(mustJSON(t, review))
	if short > size {
		t.Fatalf("a review of %d bytes is too short for the example", size)
	}
	body["metadata"].(m)["annotations"] = m{"padding": strings.Repeat("x", size-short)}
	review["request"] = admissionRequest(t, Create, body, nil)
	data := []byte(mustJSON(t, review))
	if len(data) != size {
		t.Fatalf("the review has %d bytes, want %d", len(data), size)
	}
	return data
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// Beyond MaxConcurrent reviews at once, a review is answered 429 with a
// Retry-After of one second (the API server's client retries it then);
// once the bound has room, reviews are served again.
func TestServerBoundsConcurrentReviews(t *testing.T) {
	defer goleak.VerifyNone(t)
	reg, k := kexKind()
	entered, release := make(chan struct{}), make(chan struct{})
	(&calls{}).add(k, Validating, "slow", func(*Request) error {
		entered <- struct{}{}
		<-release
		return nil
	})
	(&calls{}).add(k, Validating, "fast", nil)
	srv := httptest.NewServer(&Server{Registry: reg, MaxConcurrent: 2})
	defer srv.Close()
	review := func() admissionv1.AdmissionReview {
		return admissionv1.AdmissionReview{Request: admissionRequest(t, Create, kexBody(), nil)}
	}

	body := mustJSON(t, review())
	send := func(path string) (*http.Response, error) {
		resp, err := srv.Client().Post(srv.URL+path, "application/json", strings.NewReader(body))
		if err == nil {
			_ = resp.Body.Close()
		}
		return resp, err
	}
	codes := make(chan int, 2)
	for range 2 {
		go func() {
			resp, err := send("/slow")
			if err != nil {
				codes <- 0
				return
			}
			codes <- resp.StatusCode
		}()
	}
	<-entered
	<-entered // both slots are taken
	resp, err := send("/fast")
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "1" {
		t.Errorf("a third review at once: HTTP %d, Retry-After %q; want 429 and 1", resp.StatusCode, resp.Header.Get("Retry-After"))
	}

	// A large review counts for several: none fits beside the two.
	resp, err = srv.Client().Post(srv.URL+"/fast", "application/json", bytes.NewReader(largeReview(t, 3<<20)))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("a large review beside two: HTTP %d, want 429", resp.StatusCode)
	}

	close(release)
	for range 2 {
		if code := <-codes; code != http.StatusOK {
			t.Errorf("a slow review: HTTP %d, want 200", code)
		}
	}
	if code, _ := post(t, srv, "/fast", review(), nil); code != http.StatusOK {
		t.Errorf("a review once the slots are free: HTTP %d, want 200", code)
	}
	// Alone, a review larger than the whole bound is served.
	resp, err = srv.Client().Post(srv.URL+"/fast", "application/json", bytes.NewReader(largeReview(t, 3<<20)))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("a large review alone: HTTP %d, want 200", resp.StatusCode)
	}
}

// A review counts once against the bound, or once per MiB begun if it is
// larger, but never more than the whole bound.
func TestServerWeighsReviews(t *testing.T) {
	tests := []struct {
		name   string
		limit  int
		length int64
		want   int
	}{
		{"a small review", 16, 4 << 10, 1},
		{"one MiB", 16, 1 << 20, 1},
		{"one MiB and a byte", 16, 1<<20 + 1, 2},
		{"the largest", 16, MaxReviewBytes, 7},
		{"of unknown length", 16, -1, 7},
		{"under a small bound", 4, MaxReviewBytes, 4},
		{"the default bound", 0, MaxReviewBytes, 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := (&Server{MaxConcurrent: tt.limit}).weight(tt.length); got != tt.want {
				t.Errorf("weight(%d) under %d = %d, want %d", tt.length, tt.limit, got, tt.want)
			}
		})
	}
}

// A caller that does not send its review's body in time is answered 408,
// and its place in the bound is given back meanwhile.
func TestServerTimesOutSlowBodies(t *testing.T) {
	defer goleak.VerifyNone(t)
	reg, k := kexKind()
	(&calls{}).add(k, Validating, "v", nil)
	srv := httptest.NewServer(&Server{Registry: reg, MaxConcurrent: 1, bodyTimeout: 200 * time.Millisecond})
	defer srv.Close()
	body := mustJSON(t, admissionv1.AdmissionReview{Request: admissionRequest(t, Create, kexBody(), nil)})

	// The headers and half of the body, then nothing.
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /v HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body[:len(body)/2])
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusRequestTimeout {
		t.Errorf("a body sent in part: HTTP %d, want 408", resp.StatusCode)
	}
	if code, _ := post(t, srv, "/v", admissionv1.AdmissionReview{Request: admissionRequest(t, Create, kexBody(), nil)}, nil); code != http.StatusOK {
		t.Errorf("the next review: HTTP %d, want 200", code)
	}
}
