package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"k8s.io/client-go/rest"
)

// discoveryFault is an HTTP proxy in front of the control plane, for
// operator processes: it forwards every request with the administrator's
// credentials (envtest's transport), and, while failing, makes one API
// group fail discovery as an aggregated API that is down does. The API
// server's aggregated discovery (/apis, which client-go asks by default)
// then marks the group's versions "Stale", and the group's own discovery
// endpoint (/apis/<group>/<version>, which legacy discovery asks) answers
// 503. Requests for the group's objects pass: only discovery fails.
type discoveryFault struct {
	group   string
	failing atomic.Bool
	// stale counts the aggregated answers sent with the group marked
	// stale; refused, the group's own discovery requests answered 503.
	stale, refused atomic.Int32
	server         *httptest.Server
}

// startDiscoveryFault starts the proxy for the group; the test's end
// closes it (after what the test started later, its operators, is
// stopped).
func startDiscoveryFault(t *testing.T, group string) *discoveryFault {
	t.Helper()
	target, err := url.Parse(env.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	transport, err := rest.TransportFor(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	f := &discoveryFault{group: group}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			if r.In.URL.Path == "/apis" {
				// Plain JSON, so that the answer can be rewritten; Go's
				// transport still asks for gzip and unpacks it itself.
				r.Out.Header.Del("Accept-Encoding")
			}
		},
		Transport:      transport,
		FlushInterval:  -1, // watches stream
		ModifyResponse: f.rewrite,
	}
	f.server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f.failing.Load() && f.ownDiscovery(r.URL.Path) {
			f.refused.Add(1)
			http.Error(w, "the group's API is unavailable (injected)", http.StatusServiceUnavailable)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(f.server.Close)
	return f
}

// ownDiscovery tells the group's own discovery paths: /apis/<group> and
// /apis/<group>/<version>, not the paths of its objects below them.
func (f *discoveryFault) ownDiscovery(path string) bool {
	tail, ok := strings.CutPrefix(path, "/apis/"+f.group)
	if !ok || tail != "" && !strings.HasPrefix(tail, "/") {
		return false
	}
	return !strings.Contains(strings.Trim(tail, "/"), "/")
}

// rewrite marks the group's versions stale in aggregated discovery's
// answer while failing.
func (f *discoveryFault) rewrite(resp *http.Response) error {
	if !f.failing.Load() || resp.Request.URL.Path != "/apis" || resp.StatusCode != http.StatusOK ||
		!strings.Contains(resp.Header.Get("Content-Type"), "as=APIGroupDiscoveryList") {
		return nil
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return err
	}
	var doc map[string]any
	if err := json.Unmarshal(body, &doc); err != nil {
		return fmt.Errorf("read aggregated discovery: %w", err)
	}
	items, _ := doc["items"].([]any)
	for _, item := range items {
		group, _ := item.(map[string]any)
		meta, _ := group["metadata"].(map[string]any)
		if meta["name"] != f.group {
			continue
		}
		versions, _ := group["versions"].([]any)
		for _, v := range versions {
			if version, ok := v.(map[string]any); ok {
				version["freshness"] = "Stale"
			}
		}
	}
	if body, err = json.Marshal(doc); err != nil {
		return err
	}
	f.stale.Add(1)
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
	resp.Header.Del("Content-Encoding")
	return nil
}

// kubeconfig writes a kubeconfig for the proxy (which adds the
// credentials) into the test's directory and returns its path.
func (f *discoveryFault) kubeconfig(t *testing.T) string {
	t.Helper()
	text := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: proxy, cluster: {server: %q}}]
users: [{name: proxy, user: {}}]
contexts: [{name: proxy, context: {cluster: proxy, user: proxy}}]
current-context: proxy
`, f.server.URL)
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
