package integration

import (
	"context"
	"slices"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// heldCall holds the first call of a handler until the test lets it go,
// and records the uid of every call's object.
type heldCall struct {
	once    sync.Once
	started chan types.UID
	release chan struct{}
	freed   sync.Once
	mu      sync.Mutex
	uids    []types.UID
}

func newHeldCall() *heldCall {
	return &heldCall{started: make(chan types.UID, 1), release: make(chan struct{})}
}

// hold is what the handler calls: the first call tells started and waits
// for free, whatever its context says (a late outcome is the point);
// the others go on at once.
func (h *heldCall) hold(uid types.UID) {
	h.mu.Lock()
	h.uids = append(h.uids, uid)
	h.mu.Unlock()
	first := false
	h.once.Do(func() { first = true })
	if first {
		h.started <- uid
		<-h.release
	}
}

// free lets the first call go; once is enough, more are harmless.
func (h *heldCall) free() { h.freed.Do(func() { close(h.release) }) }

// called reports whether the handler was called for the uid.
func (h *heldCall) called(uid types.UID) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Contains(h.uids, uid)
}

// waitStarted waits for the held first call and returns its object's uid.
func (h *heldCall) waitStarted(t *testing.T) types.UID {
	t.Helper()
	var uid types.UID
	eventually(t, "the handler's first call", func() bool {
		select {
		case uid = <-h.started:
			return true
		default:
			return false
		}
	})
	return uid
}

// deleteForGood deletes an example object and waits until it is gone,
// removing all its finalizers by hand if it has any.
func deleteForGood(t *testing.T, ns, name string) {
	t.Helper()
	ctx := context.Background()
	if err := env.Client.Delete(ctx, kexRef(ns, name)); err != nil {
		t.Fatalf("delete %s: %v", name, err)
	}
	p := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))
	if err := env.Client.Patch(ctx, kexRef(ns, name), p); err != nil && !apierrors.IsNotFound(err) {
		t.Fatalf("remove the finalizers of %s: %v", name, err)
	}
	eventually(t, name+" is gone", func() bool { return gone(t, ns, name) })
}

// objectVersions records every version of one object from its creation on, as
// a watch from its creation's resourceVersion sees them.
type objectVersions struct {
	mu     sync.Mutex
	seen   []*unstructured.Unstructured
	broken string // why the watch ended before it was stopped
	cancel context.CancelFunc
	done   chan struct{}
}

// watchObjectVersions starts recording the objectVersions of created, the object as
// its creation answered.
func watchObjectVersions(t *testing.T, created *unstructured.Unstructured) *objectVersions {
	t.Helper()
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(created.GroupVersionKind().GroupVersion().WithKind(created.GetKind() + "List"))
	ctx, cancel := context.WithCancel(context.Background())
	w, err := wc.Watch(ctx, list, client.InNamespace(created.GetNamespace()),
		client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("metadata.name", created.GetName())},
		&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: created.GetResourceVersion()}})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	v := &objectVersions{seen: []*unstructured.Unstructured{created.DeepCopy()}, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(v.done)
		defer w.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case e, ok := <-w.ResultChan():
				if !ok {
					v.fail("the watch closed")
					return
				}
				switch obj, isObj := e.Object.(*unstructured.Unstructured); {
				case e.Type == watch.Error:
					v.fail("the watch failed: " + apierrors.FromObject(e.Object).Error())
					return
				case isObj && e.Type != watch.Bookmark:
					v.mu.Lock()
					v.seen = append(v.seen, obj)
					v.mu.Unlock()
				}
			}
		}
	}()
	t.Cleanup(v.stop)
	return v
}

func (v *objectVersions) fail(why string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.broken = why
}

// stop ends the watch and waits for it.
func (v *objectVersions) stop() {
	v.cancel()
	<-v.done
}

// all stops the watch and returns every version seen, failing the test
// if the watch ended early (some objectVersions could be missing then).
func (v *objectVersions) all(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	v.stop()
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.broken != "" {
		t.Fatalf("the objectVersions of the object are not all known: %s", v.broken)
	}
	return slices.Clone(v.seen)
}
