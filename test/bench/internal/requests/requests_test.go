package requests

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestKey(t *testing.T) {
	for _, tt := range []struct {
		method, path, watch, want string
	}{
		{"GET", "/apis/kopf.dev/v1/namespaces/ns/kopfexamples", "", "list kopfexamples"},
		{"GET", "/apis/kopf.dev/v1/namespaces/ns/kopfexamples", "true", "watch kopfexamples"},
		{"GET", "/apis/kopf.dev/v1/namespaces/ns/kopfexamples/kex-1", "", "get kopfexamples"},
		{"PATCH", "/apis/kopf.dev/v1/namespaces/ns/kopfexamples/kex-1", "", "patch kopfexamples"},
		{"PATCH", "/apis/kopf.dev/v1/namespaces/ns/kopfexamples/kex-1/status", "", "patch kopfexamples/status"},
		{"PUT", "/apis/kopf.dev/v1/namespaces/ns/kopfexamples/kex-1", "", "update kopfexamples"},
		{"POST", "/api/v1/namespaces/ns/events", "", "create events"},
		{"DELETE", "/apis/kopf.dev/v1/namespaces/ns/kopfexamples/kex-1", "", "delete kopfexamples"},
		{"DELETE", "/apis/kopf.dev/v1/namespaces/ns/kopfexamples", "", "deletecollection kopfexamples"},
		{"GET", "/api/v1/namespaces", "", "list namespaces"},
		{"GET", "/api/v1/namespaces/ns", "", "get namespaces"},
		{"GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/x", "", "get customresourcedefinitions"},
		{"GET", "/apis/kopf.dev/v1", "", "get /apis/kopf.dev/v1"},
		{"GET", "/api", "", "get /api"},
	} {
		if got := Key(tt.method, tt.path, tt.watch); got != tt.want {
			t.Errorf("Key(%s %s watch=%q) = %q, want %q", tt.method, tt.path, tt.watch, got, tt.want)
		}
	}
	if !IsWrite("patch kopfexamples/status") || IsWrite("watch kopfexamples") {
		t.Error("IsWrite tells writes from reads wrongly")
	}
}

// answering is a transport that answers every request with one status.
type answering int

func (a answering) RoundTrip(*http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: int(a), Body: http.NoBody}, nil
}

// A request answered with 409 counts as a request and as a conflict.
func TestConflictsCounted(t *testing.T) {
	c := &Counter{}
	u, _ := url.Parse("https://api/apis/kopf.dev/v1/namespaces/ns/kopfexamples/kex-1/status")
	for _, code := range []int{http.StatusOK, http.StatusConflict, http.StatusConflict} {
		if _, err := (roundTripper{next: answering(code), counter: c}).RoundTrip(&http.Request{Method: http.MethodPatch, URL: u}); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]int{"patch kopfexamples/status": 3, "conflict patch kopfexamples/status": 2}
	if diff := cmp.Diff(want, c.Counts()); diff != "" {
		t.Errorf("Counts() -want +got:\n%s", diff)
	}
	if got := Conflicts(c.Counts()); got != 2 {
		t.Errorf("Conflicts() = %d, want 2", got)
	}
	if IsWrite("conflict patch kopfexamples/status") {
		t.Error("a conflict's count is taken for a write")
	}
}

func TestEventCounter(t *testing.T) {
	frame := func(body string) []byte {
		n := len(body)
		return append([]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}, body...)
	}
	// A frame's body may hold newlines and be split anywhere.
	stream := append(append(frame("a\nb"), frame("")...), frame(string(make([]byte, 300)))...)
	for _, tt := range []struct {
		name   string
		framed bool
		body   []byte
		want   int
	}{
		{"json", false, []byte("{\"type\":\"ADDED\"}\n{\"type\":\"BOOKMARK\"}\n"), 2},
		{"protobuf", true, stream, 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := &Counter{}
			e := &eventCounter{counter: c, key: "k", framed: tt.framed}
			for _, b := range tt.body {
				e.counter.addN(e.key, e.countOf([]byte{b}))
			}
			if got := c.Counts()["k"]; got != tt.want {
				t.Errorf("counted %d events, want %d", got, tt.want)
			}
		})
	}
}

func TestUnowned(t *testing.T) {
	for selector, want := range map[string]bool{
		"ns.shard.kopf.dev/ring notin (a,b)": true,
		"!ns.shard.kopf.dev/ring":            true,
		"ns.shard.kopf.dev/ring=a":           false,
		"":                                   false,
	} {
		if got := Unowned(selector); got != want {
			t.Errorf("Unowned(%q) = %v, want %v", selector, got, want)
		}
	}
}
