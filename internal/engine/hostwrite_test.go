package engine

import (
	"context"
	"testing"

	"github.com/kopf-go/kopf/internal/mergepatch"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/kopf-go/kopf/internal/clients"
	"github.com/kopf-go/kopf/internal/daemons"
	"github.com/kopf-go/kopf/internal/memory"
	"github.com/kopf-go/kopf/internal/objects"
	"github.com/kopf-go/kopf/internal/ownership"
	"github.com/kopf-go/kopf/internal/registry"
	"github.com/kopf-go/kopf/internal/write"
	"github.com/kopf-go/kopf/internal/write/writetest"
	"github.com/kopf-go/kopf/pkg/memo"
	"github.com/kopf-go/kopf/pkg/patch"
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
		stored   *writetest.Stored
		wrote    bool // the write is remembered for the consistency wait
	}{
		{name: "the same object", cache: "same",
			requests: []string{"patch status", "patch"}, stored: &writetest.Stored{UID: "uid-kex", Label: "yes", Result: true}, wrote: true},
		{name: "the cache shows the next object: nothing is sent", cache: "next", recreated: true,
			requests: nil, stored: &writetest.Stored{UID: "uid-next"}},
		{name: "the cache lags: the API server refuses", cache: "same", recreated: true,
			requests: []string{"patch status 409", "patch 422"}, stored: &writetest.Stored{UID: "uid-next"}},
		{name: "frozen: the object is read from the API server", cache: "frozen",
			requests: []string{"patch", "patch status", "patch"}, stored: &writetest.Stored{UID: "uid-kex", Label: "yes", Result: true}, wrote: true},
		{name: "frozen, and replaced: nothing is sent", cache: "frozen", recreated: true,
			requests: []string{"patch 422"}, stored: &writetest.Stored{UID: "uid-next"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rig := writetest.NewRig(t)
			cached := rig.Read(t)
			if tt.recreated {
				rig.Recreate(t)
			}
			if tt.cache == "next" {
				cached = rig.Read(t)
			}
			cs := clients.NewCurrent(rig.C)
			if tt.cache != "frozen" {
				// The run's client: reads from a cache that shows cached,
				// writes to the API server.
				var run client.Client = interceptor.NewClient(rig.C, interceptor.Funcs{
					Get: func(_ context.Context, _ client.WithWatch, _ client.ObjectKey, o client.Object, _ ...client.GetOption) error {
						cached.DeepCopyInto(o.(*unstructured.Unstructured))
						return nil
					},
				})
				cs.Set(run)
			}
			kind := &registry.Kind{GVK: writetest.GVK, NewObject: func() registry.Object { return &unstructured.Unstructured{} }}
			sup := daemons.New(daemons.Settings{})
			r := newKindState(objects.Kind{Registered: kind, GVK: writetest.GVK}, resolved(t, Settings{}), cs, write.FixedProbe(true), sup,
				ownership.Unshared{}, memory.NewStore(&memo.Memo{}, nil, nil, nil))
			key := types.NamespacedName{Namespace: "ns", Name: "kex"}
			mem := r.memories.Recall("uid-kex", key)
			rig.Requests = nil

			err := r.host.Apply(context.Background(), daemons.Ref{UID: "uid-kex", Namespace: "ns", Name: "kex"}, hostPatch())
			if err != nil {
				t.Errorf("Apply() = %v, want nil", err)
			}
			if diff := cmp.Diff(tt.requests, rig.Requests); diff != "" {
				t.Errorf("requests -want +got:\n%s\nbodies: %q", diff, rig.Bodies)
			}
			if diff := cmp.Diff(tt.stored, rig.Stored(t)); diff != "" {
				t.Errorf("the object under the name -want +got:\n%s", diff)
			}
			if wrote := mem.TakeDaemonWrite() != nil; wrote != tt.wrote {
				t.Errorf("the write remembered: %v, want %v", wrote, tt.wrote)
			}
		})
	}
}

// hostPatch is a daemon's patch: a label, and a result.
func hostPatch() *patch.Patch {
	p := patch.New()
	p.SetLabel("handled", "yes")
	if err := mergepatch.SetResult(p, "create_fn", map[string]any{"done": true}); err != nil {
		panic(err)
	}
	return p
}
