package proxy

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
)

// apiServer is a stand-in upstream: watches stream the lines sent to
// their resource's channel; writes are recorded in order and answered
// 200 with "done <path>"; everything else answers "ok". It checks that
// every request carries the transport's credentials.
type apiServer struct {
	t      *testing.T
	srv    *httptest.Server
	events map[string]chan string // by resource
	mu     sync.Mutex
	writes []string
}

func newAPIServer(t *testing.T, resources ...string) *apiServer {
	a := &apiServer{t: t, events: map[string]chan string{}}
	for _, r := range resources {
		a.events[r] = make(chan string, 10)
	}
	a.srv = httptest.NewServer(http.HandlerFunc(a.serve))
	t.Cleanup(a.srv.Close)
	return a
}

func (a *apiServer) serve(w http.ResponseWriter, r *http.Request) {
	if got := r.Header.Get("Authorization"); got != "Bearer upstream" {
		http.Error(w, "credentials "+got, http.StatusUnauthorized)
		return
	}
	req := ParseRequest(r)
	switch {
	case req.Watch:
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		for {
			select {
			case <-r.Context().Done():
				return
			case line := <-a.events[req.Resource]:
				_, _ = io.WriteString(w, line+"\n")
				w.(http.Flusher).Flush()
			}
		}
	case req.IsWrite():
		body, _ := io.ReadAll(r.Body)
		a.mu.Lock()
		a.writes = append(a.writes, r.Method+" "+r.URL.Path+" "+string(body))
		a.mu.Unlock()
		_, _ = io.WriteString(w, "done "+r.URL.Path)
	default:
		_, _ = io.WriteString(w, "ok")
	}
}

func (a *apiServer) written() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.writes...)
}

// credentials is the proxy's transport: the upstream's credentials on
// every request.
type credentials struct{ base http.RoundTripper }

func (c credentials) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer upstream")
	return c.base.RoundTrip(r)
}

// startL7 starts an L7 proxy to the upstream and a client of it that
// trusts its CA and speaks HTTP/2, all closed when the test ends.
func startL7(t *testing.T, a *apiServer) (*L7, *http.Client) {
	t.Helper()
	u, _ := url.Parse(a.srv.URL)
	base := &http.Transport{}
	p, err := StartL7(u, credentials{base})
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(p.CA()) {
		t.Fatal("the proxy's CA does not parse")
	}
	ct := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}
	t.Cleanup(func() {
		ct.CloseIdleConnections()
		_ = p.Close()
		base.CloseIdleConnections()
	})
	return p, &http.Client{Transport: ct}
}

// do sends a request as the client, with the client's own credentials
// (which the proxy must not pass on), and returns the status and body.
func do(t *testing.T, c *http.Client, ctx context.Context, method, path, body string) (int, string, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, "https://"+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer client")
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if resp.ProtoMajor != 2 {
		t.Errorf("%s %s went over %s, want HTTP/2", method, path, resp.Proto)
	}
	return resp.StatusCode, string(b), err
}

// watch opens a watch and returns its lines as they come.
func watch(t *testing.T, c *http.Client, addr, path string) <-chan string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+path+"?watch=true", nil)
	resp, err := c.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	lines := make(chan string, 10)
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		cancel()
		_ = resp.Body.Close()
		<-done
	})
	return lines
}

// next is the next line within a second, "" if none.
func next(lines <-chan string, within time.Duration) string {
	select {
	case l := <-lines:
		return l
	case <-time.After(within):
		return ""
	}
}

const (
	leases   = "/apis/coordination.k8s.io/v1/namespaces/ns/leases"
	examples = "/apis/kopf.dev/v1/namespaces/ns/kopfexamples"
)

func TestParseRequest(t *testing.T) {
	tests := []struct {
		method, target string
		want           Request
	}{
		{"GET", "/apis/coordination.k8s.io/v1/namespaces/ns/leases?watch=true&labelSelector=a%3Db",
			Request{Method: "GET", Group: "coordination.k8s.io", Version: "v1", Resource: "leases", Namespace: "ns", Watch: true}},
		{"PATCH", "/apis/kopf.dev/v1/namespaces/ns/kopfexamples/o/status",
			Request{Method: "PATCH", Group: "kopf.dev", Version: "v1", Resource: "kopfexamples", Namespace: "ns", Name: "o", Subresource: "status"}},
		{"GET", "/api/v1/namespaces/ns", Request{Method: "GET", Version: "v1", Resource: "namespaces", Name: "ns"}},
		{"POST", "/api/v1/namespaces/ns/events", Request{Method: "POST", Version: "v1", Resource: "events", Namespace: "ns"}},
		{"GET", "/apis/kopf.dev/v1/kopfexamples?watch=1", Request{Method: "GET", Group: "kopf.dev", Version: "v1", Resource: "kopfexamples", Watch: true}},
		{"GET", "/api/v1/watch/namespaces/ns/pods", Request{Method: "GET", Version: "v1", Resource: "pods", Namespace: "ns", Watch: true}},
		{"GET", "/healthz", Request{Method: "GET"}},
	}
	for _, tt := range tests {
		r := httptest.NewRequest(tt.method, tt.target, nil)
		got := ParseRequest(r)
		got.Query = nil
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s %s -want +got:\n%s", tt.method, tt.target, diff)
		}
	}
}

// A stall withholds the events of the watches of one resource, one
// already open and one opened during it, while a watch of another
// resource and plain requests go on over the same connection; the
// heal delivers what was withheld, in order.
func TestL7StallsOneClassOfResponses(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) }) // first registered: runs after the other cleanups
	a := newAPIServer(t, "leases", "kopfexamples")
	p, c := startL7(t, a)
	leaseEvents := watch(t, c, p.Addr(), leases)
	exampleEvents := watch(t, c, p.Addr(), examples)
	a.events["leases"] <- "lease 1"
	if got := next(leaseEvents, time.Second); got != "lease 1" {
		t.Fatalf("before the stall, the lease watch got %q", got)
	}

	p.Stall(Watches("coordination.k8s.io", "leases"))
	a.events["leases"] <- "lease 2"
	a.events["leases"] <- "lease 3"
	if got := next(leaseEvents, quiet); got != "" {
		t.Errorf("the stalled lease watch got %q", got)
	}
	a.events["kopfexamples"] <- "example 1"
	if got := next(exampleEvents, time.Second); got != "example 1" {
		t.Errorf("the watch of another resource got %q during the stall, want example 1", got)
	}
	if code, body, err := do(t, c, context.Background(), "GET", p.Addr()+leases+"/one", ""); err != nil || code != 200 || body != "ok" {
		t.Errorf("a get of a Lease during the stall: %d %q %v", code, body, err)
	}
	if code, _, err := do(t, c, context.Background(), "PUT", p.Addr()+leases+"/one", "renew"); err != nil || code != 200 {
		t.Errorf("a Lease's renewal during the stall: %d %v", code, err)
	}
	time.Sleep(quiet) // the pump has read lease 2 and 3 by now

	if served := p.Served(); served[1] != 0 || served[2] != 4 {
		t.Errorf("the proxy served %v requests by HTTP version, want 4 over HTTP/2", served)
	}
	figures := p.Unstall()
	if figures.Streams != 1 || figures.Bytes != len("lease 2\nlease 3\n") {
		t.Errorf("the stall withheld %+v, want 1 stream and %d bytes", figures, len("lease 2\nlease 3\n"))
	}
	for _, want := range []string{"lease 2", "lease 3"} {
		if got := next(leaseEvents, time.Second); got != want {
			t.Errorf("after the heal, the lease watch got %q, want %q", got, want)
		}
	}
	a.events["leases"] <- "lease 4"
	if got := next(leaseEvents, time.Second); got != "lease 4" {
		t.Errorf("after the heal, the lease watch got %q, want lease 4", got)
	}
}

// Held writes of one resource reach the upstream only at Deliver, in the
// order they came, even one whose client gave up meanwhile; a client
// that still waits gets the upstream's answer; writes of other
// resources and reads pass all along.
func TestL7HoldsWritesThenDeliversThem(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) }) // first registered: runs after the other cleanups
	a := newAPIServer(t)
	p, c := startL7(t, a)
	p.Hold(Writes("kopf.dev", "kopfexamples"))

	type answer struct {
		code int
		body string
		err  error
	}
	first := make(chan answer, 1)
	go func() {
		code, body, err := do(t, c, context.Background(), "PATCH", p.Addr()+examples+"/o/status", "first")
		first <- answer{code, body, err}
	}()
	waitQueued(t, p, 1)
	ctx, giveUp := context.WithCancel(context.Background())
	second := make(chan answer, 1)
	go func() {
		code, body, err := do(t, c, ctx, "PATCH", p.Addr()+examples+"/o", "second")
		second <- answer{code, body, err}
	}()
	waitQueued(t, p, 2)
	giveUp()
	if got := <-second; got.err == nil {
		t.Errorf("the client that gave up got %d %q", got.code, got.body)
	}

	if code, _, err := do(t, c, context.Background(), "PUT", p.Addr()+leases+"/one", "renew"); err != nil || code != 200 {
		t.Errorf("a Lease's renewal during the hold: %d %v", code, err)
	}
	if code, body, err := do(t, c, context.Background(), "GET", p.Addr()+examples+"/o", ""); err != nil || body != "ok" {
		t.Errorf("a read of the held kind during the hold: %d %q %v", code, body, err)
	}
	time.Sleep(quiet)
	if diff := cmp.Diff([]string{"PUT " + leases + "/one renew"}, a.written()); diff != "" {
		t.Errorf("the upstream's writes during the hold -want +got:\n%s", diff)
	}
	select {
	case got := <-first:
		t.Errorf("the held write was answered before its delivery: %+v", got)
	default:
	}

	deliveries := p.Deliver()
	want := []string{"PUT " + leases + "/one renew", "PATCH " + examples + "/o/status first", "PATCH " + examples + "/o second"}
	if diff := cmp.Diff(want, a.written()); diff != "" {
		t.Errorf("the upstream's writes after the delivery -want +got:\n%s", diff)
	}
	type outcome struct {
		Method, Path string
		Status       int
		Gone         bool
	}
	var got []outcome
	for _, d := range deliveries {
		got = append(got, outcome{d.Method, d.Path, d.Status, d.Gone})
		if !d.Delivered.After(d.Held) {
			t.Errorf("%s %s delivered at %s, held at %s", d.Method, d.Path, d.Delivered, d.Held)
		}
	}
	wantOutcomes := []outcome{{"PATCH", examples + "/o/status", 200, false}, {"PATCH", examples + "/o", 200, true}}
	if diff := cmp.Diff(wantOutcomes, got); diff != "" {
		t.Errorf("the deliveries -want +got:\n%s", diff)
	}
	if d := deliveries[0]; string(d.Body) != "first" || string(d.Response) != "done "+examples+"/o/status" {
		t.Errorf("the first delivery's body %q and answer %q", d.Body, d.Response)
	}
	if ans := <-first; ans.err != nil || ans.code != 200 || ans.body != "done "+examples+"/o/status" {
		t.Errorf("the waiting client got %+v, want 200 and the upstream's answer", ans)
	}
	if code, _, err := do(t, c, context.Background(), "PATCH", p.Addr()+examples+"/o", "third"); err != nil || code != 200 {
		t.Errorf("a write after the delivery: %d %v", code, err)
	}
}

// waitQueued waits until the proxy holds n requests.
func waitQueued(t *testing.T, p *L7, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		p.mu.Lock()
		got := len(p.queue)
		p.mu.Unlock()
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the proxy holds %d requests, want %d", got, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
