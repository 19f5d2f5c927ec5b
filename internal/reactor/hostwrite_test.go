package reactor

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/kopf-go/kopf/internal/daemons"
	"github.com/kopf-go/kopf/internal/registry"
	"github.com/kopf-go/kopf/pkg/memo"
)

// A daemon's, timer's or on-event handler's patch (kindHost.Apply) goes
// to the object of its ref, as the cache has it, or to nothing: another
// object under the name gets nothing, whether the cache shows it already
// or only the API server does; without a cache (a freeze), the API server
// is asked.
func TestHostApplyGuards(t *testing.T) {
	tests := []struct {
		name string
		// cache is what the cache shows: the object ("same"), the next
		// one under its name ("next"), or nothing ("frozen": no cache).
		cache     string
		recreated bool // the API server has the next object under the name

		requests []string
		stored   *stored
		wrote    bool // the write is remembered for the consistency wait
	}{
		{name: "the same object", cache: "same",
			requests: []string{"patch status", "patch"}, stored: &stored{UID: "uid-kex", Label: "yes", Result: true}, wrote: true},
		{name: "the cache shows the next object: nothing is sent", cache: "next", recreated: true,
			requests: nil, stored: &stored{UID: "uid-next"}},
		{name: "the cache lags: the API server refuses", cache: "same", recreated: true,
			requests: []string{"patch status 409", "patch 422"}, stored: &stored{UID: "uid-next"}},
		{name: "frozen: the object is read from the API server", cache: "frozen",
			requests: []string{"patch", "patch status", "patch"}, stored: &stored{UID: "uid-kex", Label: "yes", Result: true}, wrote: true},
		{name: "frozen, and replaced: nothing is sent", cache: "frozen", recreated: true,
			requests: []string{"patch 422"}, stored: &stored{UID: "uid-next"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rig := newGuardRig(t, true)
			cached := rig.read(t)
			if tt.recreated {
				rig.recreate(t)
			}
			if tt.cache == "next" {
				cached = rig.read(t)
			}
			cs := &clients{direct: rig.c}
			if tt.cache != "frozen" {
				// The run's client: reads from a cache that shows cached,
				// writes to the API server.
				var run client.Client = interceptor.NewClient(rig.c, interceptor.Funcs{
					Get: func(_ context.Context, _ client.WithWatch, _ client.ObjectKey, o client.Object, _ ...client.GetOption) error {
						cached.DeepCopyInto(o.(*unstructured.Unstructured))
						return nil
					},
				})
				cs.set(run)
			}
			kind := &registry.Kind{GVK: cycleGVK, NewObject: func() registry.Object { return &unstructured.Unstructured{} }}
			sup := daemons.New(daemons.Settings{})
			r := newReconciler(kindObjects{kind: kind, gvk: cycleGVK}, resolved(t, Settings{}), cs, fixedProbe(true), sup, unshared{}, newMemories(&memo.Memo{}, nil, nil))
			key := types.NamespacedName{Namespace: "ns", Name: "kex"}
			mem := r.memories.recall("uid-kex", key)
			rig.requests = nil

			err := r.host.Apply(context.Background(), daemons.Ref{UID: "uid-kex", Namespace: "ns", Name: "kex"}, cyclePatch())
			if err != nil {
				t.Errorf("Apply() = %v, want nil", err)
			}
			if diff := cmp.Diff(tt.requests, rig.requests); diff != "" {
				t.Errorf("requests -want +got:\n%s\nbodies: %q", diff, rig.bodies)
			}
			if diff := cmp.Diff(tt.stored, rig.stored(t)); diff != "" {
				t.Errorf("the object under the name -want +got:\n%s", diff)
			}
			if wrote := mem.daemonWrote.Load() != nil; wrote != tt.wrote {
				t.Errorf("the write remembered: %v, want %v", wrote, tt.wrote)
			}
		})
	}
}

// An object created anew under a known name replaces the memory of the
// one before, and the one before is told of as gone (its daemons and
// timers stop), whether the new one is first seen by its event or by a
// reconcile; the same object seen again replaces nothing.
func TestMemoriesReplaceByName(t *testing.T) {
	var replaced []types.UID
	m := newMemories(&memo.Memo{}, nil, nil)
	m.replaced = func(uid types.UID) { replaced = append(replaced, uid) }
	key := types.NamespacedName{Namespace: "ns", Name: "kex"}
	first := m.recall("uid-1", key)
	first.fullyHandledOnce = true
	m.recall("uid-1", key)
	m.notice("uid-2", key, false)
	second := m.recall("uid-2", key)
	m.recall("uid-3", key)
	if diff := cmp.Diff([]types.UID{"uid-1", "uid-2"}, replaced); diff != "" {
		t.Errorf("replaced -want +got:\n%s", diff)
	}
	if second == first || second.fullyHandledOnce {
		t.Error("the new object got the memory of the one before")
	}
	if m.size() != 1 {
		t.Errorf("%d memories, want the newest object's only", m.size())
	}
}
