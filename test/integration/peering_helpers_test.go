package integration

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/internal/isotime"
)

// peeringObject is a KopfPeering (or, without a namespace, a
// ClusterKopfPeering).
func peeringObject(namespace, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("kopf.dev/v1")
	if namespace == "" {
		u.SetKind("ClusterKopfPeering")
	} else {
		u.SetKind("KopfPeering")
		u.SetNamespace(namespace)
	}
	u.SetName(name)
	return u
}

func createPeering(t *testing.T, namespace, name string) {
	t.Helper()
	createPeeringWith(t, namespace, name, nil)
}

// createPeeringWith creates a peering object with these peer records in
// it from the start (its status is no subresource).
func createPeeringWith(t *testing.T, namespace, name string, records map[string]any) {
	t.Helper()
	obj := peeringObject(namespace, name)
	if records != nil {
		// As JSON, so that the records' numbers are what unstructured
		// objects hold.
		raw, err := json.Marshal(records)
		if err != nil {
			t.Fatal(err)
		}
		var status map[string]any
		if err := json.Unmarshal(raw, &status); err != nil {
			t.Fatal(err)
		}
		obj.Object["status"] = status
	}
	if err := env.Client.Create(context.Background(), obj); err != nil {
		t.Fatalf("create the peering %s: %v", name, err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), obj) })
}

// setPeer writes (or, with nil, removes) a peer record as another operator
// would: as raw JSON, so that Kopf's exact form can be written.
func setPeer(t *testing.T, namespace, name, id string, record any) {
	t.Helper()
	raw, err := json.Marshal(map[string]any{"status": map[string]any{id: record}})
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Patch(context.Background(), peeringObject(namespace, name), client.RawPatch(types.MergePatchType, raw)); err != nil {
		t.Fatalf("write the peer %s: %v", id, err)
	}
}

// kopfRecord is a peer record exactly as Python Kopf writes it.
func kopfRecord(priority, lifetime int) map[string]any {
	return map[string]any{"priority": priority, "lifetime": lifetime, "lastseen": isotime.Format(time.Now())}
}

// peers returns the peer records of a peering object.
func peers(t *testing.T, namespace, name string) map[string]any {
	t.Helper()
	obj := peeringObject(namespace, name)
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
		t.Fatalf("read the peering %s: %v", name, err)
	}
	status, _ := obj.Object["status"].(map[string]any)
	return status
}

// watches counts the watch requests of one resource that are open, and
// every list or watch of it made so far, as seen on the operator's
// connection.
type watches struct {
	resource string
	mu       sync.Mutex
	open     int
	// reads are the lists and watches of the resource's collection: the
	// only way for an operator to learn of an object it has not seen.
	reads int
}

// config returns a connection that counts the open watches and the reads.
func (w *watches) config() *rest.Config {
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTrip(func(req *http.Request) (*http.Response, error) {
			if req.Method != http.MethodGet || !strings.HasSuffix(req.URL.Path, "/"+w.resource) {
				return rt.RoundTrip(req)
			}
			w.mu.Lock()
			w.reads++
			w.mu.Unlock()
			if req.URL.Query().Get("watch") != "true" {
				return rt.RoundTrip(req)
			}
			w.add(1)
			resp, err := rt.RoundTrip(req)
			if err != nil {
				w.add(-1)
				return nil, err
			}
			resp.Body = &closer{ReadCloser: resp.Body, onClose: func() { w.add(-1) }}
			return resp, nil
		})
	})
	return cfg
}

func (w *watches) add(n int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.open += n
}

func (w *watches) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.open
}

// read is how many lists and watches of the resource were made so far.
func (w *watches) read() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.reads
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// closer calls onClose once, when the body is closed.
type closer struct {
	io.ReadCloser
	once    sync.Once
	onClose func()
}

func (c *closer) Close() error {
	err := c.ReadCloser.Close()
	c.once.Do(c.onClose)
	return err
}

// isHandled reports whether the example object of that name got a diffbase.
func isHandled(t *testing.T, namespace, name string) bool {
	t.Helper()
	return get(t, namespace, name).GetAnnotations()["kopf.zalando.org/last-handled-configuration"] != ""
}
