package integration

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// sentPatch is one patch of an object as the API server answered it.
type sentPatch struct {
	body string
	code int
}

// heldPatches holds the first patch of one object on its way to the API
// server until the test lets it go, and records every patch of it.
type heldPatches struct {
	name    string
	once    sync.Once
	started chan struct{}
	release chan struct{}
	freed   sync.Once
	mu      sync.Mutex
	sent    []sentPatch
}

func (h *heldPatches) free() { h.freed.Do(func() { close(h.release) }) }

func (h *heldPatches) all() []sentPatch {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]sentPatch(nil), h.sent...)
}

func (h *heldPatches) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTrip(func(req *http.Request) (*http.Response, error) {
		if req.Method != http.MethodPatch || !strings.HasSuffix(req.URL.Path, "/configmaps/"+h.name) {
			return rt.RoundTrip(req)
		}
		body, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, err
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		first := false
		h.once.Do(func() { first = true })
		if first {
			close(h.started)
			select {
			case <-h.release:
			case <-req.Context().Done():
				return nil, req.Context().Err()
			}
		}
		resp, err := rt.RoundTrip(req)
		// A patch that changes nothing is the assigner's read of the
		// object after a refused placement, not a placement.
		if err == nil && string(body) != "{}" {
			h.mu.Lock()
			h.sent = append(h.sent, sentPatch{body: string(body), code: resp.StatusCode})
			h.mu.Unlock()
		}
		return resp, err
	})
}

// The assigner's write of an owner label is guarded by the uid and the
// resourceVersion it saw: a ConfigMap deleted and created anew under its
// name while that write is on its way gets nothing of it (the API server
// refuses it), and is then placed as the object it is, by a write that
// names its own uid.
func TestAssignerPlacesARecreatedObjectAnew(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	m1, _ := startMember(t, ns, "kopf@host-1", nil)
	held := &heldPatches{name: "cm-again", started: make(chan struct{}), release: make(chan struct{})}
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(held.wrap)
	startAssignerOn(t, ns, "kopf@host-1", time.Minute, clock.RealClock{}, cfg)
	t.Cleanup(held.free) // before the assigner's stop

	ctx := context.Background()
	first := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cm-again"}}
	if err := env.Client.Create(ctx, first); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the assigner's write of the first object", func() bool {
		select {
		case <-held.started:
			return true
		default:
			return false
		}
	})
	if err := env.Client.Delete(ctx, first); err != nil {
		t.Fatal(err)
	}
	second := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cm-again"}}
	if err := env.Client.Create(ctx, second); err != nil {
		t.Fatal(err)
	}
	held.free()

	keys := ringKeys(ns)
	eventually(t, "the second object is placed", func() bool {
		now := &corev1.ConfigMap{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(second), now); err != nil {
			t.Fatal(err)
		}
		// The patch is recorded once its answer is back, which may be
		// after the label shows.
		return now.Labels[keys.Owner] == m1.Name() && len(held.all()) >= 2
	})
	sent := held.all()
	if len(sent) < 2 {
		t.Fatalf("patches of cm-again: %v, want the refused one and the second object's", sent)
	}
	if s := sent[0]; s.code != http.StatusConflict || !strings.Contains(s.body, `"uid":"`+string(first.UID)+`"`) {
		t.Errorf("the held patch: %d %s; want a conflict, for the first object's uid %s", s.code, s.body, first.UID)
	}
	last := sent[len(sent)-1]
	if last.code != http.StatusOK || !strings.Contains(last.body, `"uid":"`+string(second.UID)+`"`) {
		t.Errorf("the last patch: %d %s; want it written, for the second object's uid %s", last.code, last.body, second.UID)
	}
}
