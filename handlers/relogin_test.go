package handlers

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
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
	withRelogin(cfg, func(context.Context) (*rest.Config, error) {
		logins.Add(1)
		return &rest.Config{BearerToken: "new"}, nil
	}, logr.Discard())
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
