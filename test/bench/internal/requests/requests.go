// Package requests counts the requests a client makes to the API server,
// by verb and resource, at the transport: every request counts, retries
// and conflicts included; the conflicts are counted once more on their
// own (Conflicts).
package requests

import (
	"net/http"
	"strings"
	"sync"

	"k8s.io/client-go/rest"
)

// Counter counts requests. The zero value is ready.
type Counter struct {
	mu     sync.Mutex
	counts map[string]int
}

// Instrument makes the clients built from cfg count their requests here.
func (c *Counter) Instrument(cfg *rest.Config) {
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper{next: rt, counter: c}
	})
}

// Counts returns a copy of the counts, keyed by "verb resource" (e.g.
// "patch kopfexamples/status", "watch kopfexamples").
func (c *Counter) Counts() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.counts))
	for k, v := range c.counts {
		out[k] = v
	}
	return out
}

func (c *Counter) add(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.counts == nil {
		c.counts = map[string]int{}
	}
	c.counts[key]++
}

type roundTripper struct {
	next    http.RoundTripper
	counter *Counter
}

func (r roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	key := Key(req.Method, req.URL.Path, req.URL.Query().Get("watch"))
	r.counter.add(key)
	resp, err := r.next.RoundTrip(req)
	if err == nil && resp.StatusCode == http.StatusConflict {
		r.counter.add(conflictPrefix + key)
	}
	return resp, err
}

// conflictPrefix marks the counts of requests that the API server
// answered with 409 Conflict: "conflict patch kopfexamples/status". The
// verb of such a key is "conflict", which is neither a read nor a write.
const conflictPrefix = "conflict "

// Conflicts sums the counts of the requests answered with a conflict.
func Conflicts(counts map[string]int) int {
	n := 0
	for key, v := range counts {
		if strings.HasPrefix(key, conflictPrefix) {
			n += v
		}
	}
	return n
}

// Key names a request as the API server's audit log would: its verb (get,
// list, watch, create, update, patch, delete, deletecollection) and its
// resource, with the subresource after a slash. Discovery and other
// non-resource paths are "get /path".
func Key(method, path, watch string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	var rest []string
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		rest = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		rest = parts[3:]
	default:
		return strings.ToLower(method) + " /" + strings.Join(parts, "/")
	}
	if len(rest) >= 3 && rest[0] == "namespaces" {
		rest = rest[2:]
	}
	if len(rest) == 0 {
		return strings.ToLower(method) + " /" + strings.Join(parts, "/")
	}
	resource, named := rest[0], len(rest) >= 2
	if len(rest) >= 3 {
		resource += "/" + rest[2]
	}
	verb := strings.ToLower(method)
	switch method {
	case http.MethodGet:
		switch {
		case watch == "true" || watch == "1":
			verb = "watch"
		case named:
			verb = "get"
		default:
			verb = "list"
		}
	case http.MethodPost:
		verb = "create"
	case http.MethodPut:
		verb = "update"
	case http.MethodPatch:
		verb = "patch"
	case http.MethodDelete:
		if !named {
			verb = "deletecollection"
		}
	}
	return verb + " " + resource
}

// IsWrite tells whether a key's verb changes something.
func IsWrite(key string) bool {
	verb, _, _ := strings.Cut(key, " ")
	switch verb {
	case "create", "update", "patch", "delete", "deletecollection":
		return true
	}
	return false
}
