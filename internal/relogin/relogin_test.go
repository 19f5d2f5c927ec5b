package relogin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
)

// A 401 runs the login handlers again, once for all the requests refused
// with the old token, and the requests are retried with the new one,
// bodies included.
func TestReloginOnUnauthorized(t *testing.T) {
	var valid atomic.Value
	valid.Store("old")
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+valid.Load().(string) {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		body, _ := io.ReadAll(r.Body)
		_, _ = w.Write(append([]byte("ok:"), body...))
	}))
	defer server.Close()

	var logins atomic.Int32
	cfg := &rest.Config{Host: server.URL, BearerToken: "old"}
	again := Wrap(context.Background(), cfg, func(context.Context) (*rest.Config, error) {
		logins.Add(1)
		return &rest.Config{BearerToken: "new"}, nil
	}, logr.Discard())
	defer again.Close()
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	get := func(body string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, server.URL, strings.NewReader(body))
		resp, err := httpClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := get("a"); code != http.StatusOK {
		t.Fatalf("with the valid token: %d", code)
	}

	valid.Store("new") // the old token expires
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if code, body := get("b"); code != http.StatusOK || body != "ok:b" {
				t.Errorf("after the expiry: %d %q, want 200 and the body sent again", code, body)
			}
		})
	}
	wg.Wait()
	if n := logins.Load(); n != 1 {
		t.Errorf("logged in again %d times, want once for all the refused requests", n)
	}

	valid.Store("revoked-for-good") // the login gives nothing better
	if code, _ := get("c"); code != http.StatusUnauthorized {
		t.Errorf("with credentials the login cannot renew: %d, want the 401", code)
	}
}

// fakeServer is an API server as a round tripper: paths under /open take
// any token, the others only the valid one; it records what it was sent.
type fakeServer struct {
	mu    sync.Mutex
	valid string
	seen  []string
}

func (f *fakeServer) RoundTrip(req *http.Request) (*http.Response, error) {
	token := strings.TrimPrefix(req.Header.Get("Authorization"), "Bearer ")
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seen = append(f.seen, req.URL.Path+" "+token)
	code := http.StatusOK
	if !strings.HasPrefix(req.URL.Path, "/open") && token != f.valid {
		code = http.StatusUnauthorized
	}
	return &http.Response{StatusCode: code, Body: io.NopCloser(strings.NewReader("")), Request: req}, nil
}

func (f *fakeServer) requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.seen...)
}

// gatedLogin is a login handler that hands its context to the test when
// it begins and gives the token it is released with (or fails when its
// context ends).
type gatedLogin struct {
	calls   atomic.Int32
	begun   chan context.Context
	release chan string
}

func newGatedLogin() *gatedLogin {
	return &gatedLogin{begun: make(chan context.Context, 10), release: make(chan string)}
}

func (g *gatedLogin) fn(ctx context.Context) (*rest.Config, error) {
	g.calls.Add(1)
	g.begun <- ctx
	select {
	case token := <-g.release:
		return &rest.Config{BearerToken: token}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

type ctxKey string

// newTestRelogin is a transport with re-logins on a fake clock, in front
// of the server; the logins run on a context that carries the value
// "operator". The test's end closes it, and goleak finds nothing left.
func newTestRelogin(t *testing.T, server *fakeServer, login func(context.Context) (*rest.Config, error)) (*relogin, *clocktesting.FakeClock) {
	t.Helper()
	ignore := goleak.IgnoreCurrent()
	fc := clocktesting.NewFakeClock(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	ctx := context.WithValue(context.Background(), ctxKey("who"), "operator")
	s := newRelogins(ctx, "old", login, logr.Discard(), fc)
	t.Cleanup(func() {
		s.Close()
		goleak.VerifyNone(t, ignore)
	})
	return &relogin{base: server, s: s}, fc
}

// reply is what one request got.
type reply struct {
	code int
	err  error
}

// send sends a GET of the path with ctx in a goroutine of the test's; the
// channel gives its reply.
func send(ctx context.Context, rt http.RoundTripper, path string) <-chan reply {
	out := make(chan reply, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://api.example"+path, nil)
		resp, err := rt.RoundTrip(req)
		if err != nil {
			out <- reply{err: err}
			return
		}
		_ = resp.Body.Close()
		out <- reply{code: resp.StatusCode}
	}()
	return out
}

func waitFor[T any](t *testing.T, what string, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(30 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// While a slow login runs, a request that the server does not refuse (a
// Lease renewal, say) goes through with the current token, without
// waiting for it; the refused request waits for the login, which runs on
// the operator's context, not the request's, and is retried with the new
// token.
func TestReloginSlowLoginBlocksNoOtherRequest(t *testing.T) {
	server := &fakeServer{valid: "new"}
	login := newGatedLogin()
	rt, _ := newTestRelogin(t, server, login.fn)

	requestCtx := context.WithValue(context.Background(), ctxKey("who"), "request")
	refused := send(requestCtx, rt, "/refused")
	loginCtx := waitFor(t, "the login to begin", login.begun)
	if who := loginCtx.Value(ctxKey("who")); who != "operator" {
		t.Errorf("the login runs on the context of %v, want the operator's own", who)
	}

	if got := waitFor(t, "the unrefused request, while the login runs", send(context.Background(), rt, "/open/lease")); got.code != http.StatusOK {
		t.Errorf("the unrefused request: %+v, want 200", got)
	}
	login.release <- "new"
	if got := waitFor(t, "the refused request", refused); got.code != http.StatusOK {
		t.Errorf("the refused request: %+v, want 200 after the login", got)
	}
	want := []string{"/refused old", "/open/lease old", "/refused new"}
	if diff := cmp.Diff(want, server.requests()); diff != "" {
		t.Errorf("requests -want +got:\n%s", diff)
	}
}

// Refused requests wait for the one login, each bounded by its own
// context: one that gives up gets its context's error at once, and the
// login goes on for the others, which are retried with its token.
func TestReloginWaitersBoundedByTheirContext(t *testing.T) {
	server := &fakeServer{valid: "new"}
	login := newGatedLogin()
	rt, _ := newTestRelogin(t, server, login.fn)

	impatient, giveUp := context.WithCancel(context.Background())
	first := send(impatient, rt, "/a")
	loginCtx := waitFor(t, "the login to begin", login.begun)
	second := send(context.Background(), rt, "/b")
	giveUp()
	if got := waitFor(t, "the request that gave up", first); !errors.Is(got.err, context.Canceled) {
		t.Errorf("the request that gave up: %+v, want its context's error", got)
	}
	if err := loginCtx.Err(); err != nil {
		t.Errorf("the login's context ended with the request's: %v", err)
	}
	login.release <- "new"
	if got := waitFor(t, "the request that waited", second); got.code != http.StatusOK {
		t.Errorf("the request that waited: %+v, want 200 with the new token", got)
	}
	if n := login.calls.Load(); n != 1 {
		t.Errorf("%d logins, want one for both refused requests", n)
	}
}

// A login that hangs is cut at the timeout on the clock: the requests
// that waited get their 401s, and the next 401 logs in again.
func TestReloginTimeout(t *testing.T) {
	server := &fakeServer{valid: "new"}
	login := newGatedLogin()
	rt, fc := newTestRelogin(t, server, login.fn)

	refused := send(context.Background(), rt, "/a")
	loginCtx := waitFor(t, "the login to begin", login.begun)
	fc.Step(reloginTimeout)
	if got := waitFor(t, "the refused request", refused); got.code != http.StatusUnauthorized {
		t.Errorf("the refused request after a login that timed out: %+v, want its 401", got)
	}
	if cause := context.Cause(loginCtx); cause == nil || !strings.Contains(cause.Error(), "the login took longer than 30s") {
		t.Errorf("the login's context ended with %v, want the timeout", cause)
	}
	next := send(context.Background(), rt, "/b")
	waitFor(t, "the next login to begin", login.begun)
	login.release <- "new"
	if got := waitFor(t, "the next request", next); got.code != http.StatusOK {
		t.Errorf("the next request: %+v, want 200 after a login that worked", got)
	}
	if n := login.calls.Load(); n != 2 {
		t.Errorf("%d logins, want 2", n)
	}
}

// A login that gives no better token leaves the 401; another 401 within
// a second of that login's start gets no login of its own, one after it
// does. Once closed, no login starts.
func TestReloginInterval(t *testing.T) {
	server := &fakeServer{valid: "never"}
	var logins atomic.Int32
	rt, fc := newTestRelogin(t, server, func(context.Context) (*rest.Config, error) {
		logins.Add(1)
		return &rest.Config{BearerToken: "old"}, nil
	})
	var got []string
	step := func(what string) {
		r := waitFor(t, what, send(context.Background(), rt, "/a"))
		got = append(got, fmt.Sprintf("%s: %s, logins %d", what, http.StatusText(r.code), logins.Load()))
	}
	step("first")
	step("at once")
	fc.Step(reloginInterval)
	step("a second later")
	rt.s.Close()
	fc.Step(reloginInterval)
	step("closed")
	want := []string{"first: Unauthorized, logins 1", "at once: Unauthorized, logins 1",
		"a second later: Unauthorized, logins 2", "closed: Unauthorized, logins 2"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("-want +got:\n%s", diff)
	}
}
