// Package requests counts the requests a client makes to the API server,
// by verb and resource, at the transport: every request counts, retries
// and conflicts included; the conflicts are counted once more on their
// own (Conflicts).
package requests

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"sync"

	"k8s.io/client-go/rest"
)

// Counter counts requests. The zero value is ready.
type Counter struct {
	// Events, if set, counts the events that watches receive too (keys
	// with EventsPrefix); off by default, so that the other benchmarks'
	// sums over all keys stay sums of requests.
	Events bool

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

func (c *Counter) add(key string) { c.addN(key, 1) }

func (c *Counter) addN(key string, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.counts == nil {
		c.counts = map[string]int{}
	}
	c.counts[key] += n
}

type roundTripper struct {
	next    http.RoundTripper
	counter *Counter
}

func (r roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	query := req.URL.Query()
	key := Key(req.Method, req.URL.Path, query.Get("watch"))
	r.counter.add(key)
	resp, err := r.next.RoundTrip(req)
	if err == nil && resp.StatusCode == http.StatusConflict {
		r.counter.add(conflictPrefix + key)
	}
	if r.counter.Events && err == nil && resp.StatusCode == http.StatusOK && strings.HasPrefix(key, "watch ") {
		events := EventsPrefix + key
		if Unowned(query.Get("labelSelector")) {
			events += UnownedSuffix
		}
		framed := strings.Contains(resp.Header.Get("Content-Type"), "protobuf")
		resp.Body = &eventCounter{ReadCloser: resp.Body, counter: r.counter, key: events, framed: framed}
	}
	return resp, err
}

// EventsPrefix marks the counts of the events that watches received:
// "events watch kopfexamples", bookmarks included. A watch of JSON sends
// one event a line, so its lines are counted as they are read; one of
// protobuf (the metadata-only watches' default) sends frames, each after
// its length in 4 bytes, big-endian, so its frames are. The verb of such
// a key is "events", which is neither a read nor a write.
const EventsPrefix = "events "

// UnownedSuffix marks the events of the watches whose label selector picks
// the objects that no live member owns (a sharding ring's assigner's:
// "owner notin (members)", or "!owner" when there are none):
// "events watch kopfexamples unowned".
const UnownedSuffix = " unowned"

// Unowned tells whether a label selector is a ring assigner's: a notin
// requirement, or one of a label's absence.
func Unowned(selector string) bool {
	return strings.Contains(selector, " notin ") || strings.HasPrefix(selector, "!")
}

// eventCounter counts the events of a watch's body as they are read:
// its lines, or its frames if framed.
type eventCounter struct {
	io.ReadCloser
	counter *Counter
	key     string
	framed  bool
	// header is how many bytes of the next frame's length were read, and
	// length what they say so far; rest is how much of the frame's body
	// is still to come.
	header int
	length uint32
	rest   uint32
}

func (e *eventCounter) Read(p []byte) (int, error) {
	n, err := e.ReadCloser.Read(p)
	if events := e.countOf(p[:n]); events > 0 {
		e.counter.addN(e.key, events)
	}
	return n, err
}

// countOf counts the events that b, the body's next bytes, begins.
func (e *eventCounter) countOf(b []byte) int {
	if !e.framed {
		return bytes.Count(b, []byte{'\n'})
	}
	return e.frames(b)
}

// frames follows the frames through b and counts those whose length was
// read in full.
func (e *eventCounter) frames(b []byte) int {
	events := 0
	for len(b) > 0 {
		if e.rest > 0 {
			skip := min(uint32(len(b)), e.rest)
			e.rest -= skip
			b = b[skip:]
			continue
		}
		e.length = e.length<<8 | uint32(b[0])
		b = b[1:]
		if e.header++; e.header == 4 {
			events++
			e.rest, e.header, e.length = e.length, 0, 0
		}
	}
	return events
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

// ConflictsOn sums the counts of the requests about the resource (its
// subresources too) answered with a conflict.
func ConflictsOn(counts map[string]int, resource string) int {
	n := 0
	for key, v := range counts {
		if rest, ok := strings.CutPrefix(key, conflictPrefix); ok {
			if _, res, _ := strings.Cut(rest, " "); strings.HasPrefix(res, resource) {
				n += v
			}
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
