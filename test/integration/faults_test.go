package integration

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// faults are API failures and stale reads, the things a real cluster does
// now and then, injected into the clients the engine uses (wrap).
type faults struct {
	mu sync.Mutex
	// fail returns an error for a write, or nil to let it through. It gets
	// the patch's JSON and whether it goes to /status.
	fail func(data string, status bool) error
	// lag makes reads return the object as it was before the operator's
	// first main patch of it, for this long after that patch.
	lag   time.Duration
	stale map[client.ObjectKey]staleRead
	// inflate makes the resourceVersion reported back after a main patch
	// one that the cache will never reach.
	inflate bool
}

type staleRead struct {
	obj   client.Object
	until time.Time
}

// faulty is one of the engine's clients, with the faults injected.
type faulty struct {
	client.Client
	f *faults
}

// wrap is handlers.Options.WrapClient.
func (f *faults) wrap(c client.Client) client.Client { return &faulty{Client: c, f: f} }

func (w *faulty) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	f := w.f
	f.mu.Lock()
	s, ok := f.stale[key]
	f.mu.Unlock()
	if ok && time.Now().Before(s.until) {
		raw, _ := json.Marshal(s.obj)
		return json.Unmarshal(raw, obj)
	}
	return w.Client.Get(ctx, key, obj, opts...)
}

func (w *faulty) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	f := w.f
	data, _ := patch.Data(obj)
	if err := f.check(string(data), false); err != nil {
		return err
	}
	// The engine patches with metadata-only objects; the stale read is the
	// whole object as it was before the patch.
	before := &unstructured.Unstructured{}
	before.SetGroupVersionKind(obj.GetObjectKind().GroupVersionKind())
	if err := w.Client.Get(ctx, client.ObjectKeyFromObject(obj), before); err != nil {
		return err
	}
	if err := w.Client.Patch(ctx, obj, patch, opts...); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, seen := f.stale[client.ObjectKeyFromObject(obj)]; f.lag > 0 && !seen {
		if f.stale == nil {
			f.stale = map[client.ObjectKey]staleRead{}
		}
		f.stale[client.ObjectKeyFromObject(obj)] = staleRead{obj: before, until: time.Now().Add(f.lag)}
	}
	if f.inflate {
		obj.SetResourceVersion(obj.GetResourceVersion() + "000000")
	}
	return nil
}

func (w *faulty) Status() client.SubResourceWriter {
	return &faultyStatus{SubResourceWriter: w.Client.Status(), f: w.f}
}

func (f *faults) check(data string, status bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail == nil {
		return nil
	}
	return f.fail(data, status)
}

type faultyStatus struct {
	client.SubResourceWriter
	f *faults
}

func (s *faultyStatus) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	data, _ := patch.Data(obj)
	if err := s.f.check(string(data), true); err != nil {
		return err
	}
	return s.SubResourceWriter.Patch(ctx, obj, patch, opts...)
}

// once returns a failure function that fails the first write matching
// the condition with err, and lets everything else through.
func once(match func(data string, status bool) bool, err error) func(string, bool) error {
	done := false
	return func(data string, status bool) error {
		if !done && match(data, status) {
			done = true
			return err
		}
		return nil
	}
}

func containing(s string) func(string, bool) bool {
	return func(data string, _ bool) bool { return strings.Contains(data, s) }
}
