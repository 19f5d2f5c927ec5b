package cycle

import (
	"context"
	"reflect"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/internal/causes"
	"github.com/kopf-go/kopf/internal/clients"
	"github.com/kopf-go/kopf/internal/cycle/cycletest"
	"github.com/kopf-go/kopf/internal/execution"
	"github.com/kopf-go/kopf/internal/memory"
	"github.com/kopf-go/kopf/internal/objects"
	"github.com/kopf-go/kopf/internal/ownership"
	"github.com/kopf-go/kopf/internal/registry"
	"github.com/kopf-go/kopf/internal/write"
	"github.com/kopf-go/kopf/internal/write/writetest"
	"github.com/kopf-go/kopf/pkg/memo"
	"github.com/kopf-go/kopf/pkg/progress"
)

// sharingCache is controller-runtime's cache as the cycle reads it: asked
// not to copy, it hands out its own object's map, as the informer's store
// holds it.
type sharingCache struct{ obj *unstructured.Unstructured }

func (c *sharingCache) Get(_ context.Context, _ client.ObjectKey, o client.Object, opts ...client.GetOption) error {
	get := client.GetOptions{}
	get.ApplyOptions(opts)
	if get.UnsafeDisableDeepCopy != nil && *get.UnsafeDisableDeepCopy {
		o.(*unstructured.Unstructured).Object = c.obj.Object
		return nil
	}
	c.obj.DeepCopyInto(o.(*unstructured.Unstructured))
	return nil
}

// seenProgress records the bodies that the round's progress storage was
// given to read.
type seenProgress struct {
	progress.Storage
	bodies *[]map[string]any
}

func (p seenProgress) Fetch(body map[string]any, id string) (*progress.Record, error) {
	*p.bodies = append(*p.bodies, body)
	return p.Storage.Fetch(body, id)
}

// seenDaemons records the bodies that the daemons' sync was given.
type seenDaemons struct {
	noDaemons
	bodies *[]map[string]any
}

func (d seenDaemons) Sync(o Object, _ map[string]any) { *d.bodies = append(*d.bodies, o.Body) }

// sameMap reports whether a and b are one map, not equal ones.
func sameMap(a, b map[string]any) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// A cycle reads the object from the cache without a copy, and takes its
// own before anything may modify it: the operator's filters and handlers
// (which modify what they get, here), and the writes (which fill the
// object in with the API server's answer). The cache's object is the same
// after every cycle; and the daemons' sync, unless a filter runs code, is
// given the cache's object itself, not a copy.
func TestCyclesLeaveTheCachedObjectAlone(t *testing.T) {
	// meddle modifies an object and its body as careless operator code would.
	meddle := func(obj registry.Object, c *causes.Cause) {
		obj.SetLabels(map[string]string{"meddled": "yes"})
		if spec, ok := c.Body["spec"].(map[string]any); ok {
			spec["field"] = "meddled"
		}
		c.Body["meddled"] = true
	}
	tests := []struct {
		name string
		obj  *unstructured.Unstructured
		// when: the create handler has a filter that runs code (and
		// meddles); own: whose the object is (unshared else).
		when   bool
		own    ownership.Ownership
		unsent bool // the memory keeps outcomes that the last cycle could not write
		listed bool // found in the first listing: the cause is a resume, which no handler of the kind takes
		// writes are the patches sent; synced: the daemons were synced
		// (not for an object that is not this replica's to work on).
		writes int
		synced bool
	}{
		{name: "a handler meddles, and its outcome is written", obj: writetest.Object("a", nil), writes: 2, synced: true},
		{name: "a filter meddles", obj: writetest.Object("a", nil), when: true, writes: 2, synced: true},
		{name: "only the finalizer is written", obj: writetest.Unfinalized(writetest.Object("a", nil)), writes: 1, synced: true},
		{name: "the outcomes of the last cycle are written", obj: writetest.Object("a", writetest.Handled("a")), unsent: true, writes: 1, synced: true},
		{name: "a handover", obj: writetest.Object("a", writetest.Handled("a")), own: handingTo{next: "m2", settled: &[]bool{}}, writes: 1},
		{name: "a label put back", obj: writetest.Object("a", writetest.Handled("a")), own: putBack{}, writes: 1},
		{name: "nothing to do", obj: writetest.Object("a", writetest.Handled("a")), writes: 0, synced: true},
		{name: "a round in which no handler runs", obj: writetest.Object("a", writetest.Handled("a")), listed: true, writes: 0, synced: true},
		{name: "nothing to do, with a filter that runs code", obj: writetest.Object("a", writetest.Handled("a")), when: true, writes: 0, synced: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := cycletest.NewAPI(t, tt.obj)
			cache := &sharingCache{obj: &unstructured.Unstructured{}}
			cache.obj.SetGroupVersionKind(writetest.GVK)
			if err := api.C.Get(context.Background(), client.ObjectKeyFromObject(tt.obj), cache.obj); err != nil {
				t.Fatal(err)
			}
			before := cache.obj.DeepCopy()
			kind := &registry.Kind{GVK: writetest.GVK, NewObject: func() registry.Object { return &unstructured.Unstructured{} }}
			create := &registry.ChangeHandler{Handler: execution.Handler{ID: "create_fn"}, Reason: causes.Create,
				Fn: func(_ context.Context, obj registry.Object, c *causes.Cause) (any, error) {
					meddle(obj, c)
					return map[string]any{"done": true}, nil
				}}
			if tt.when {
				create.When = func(obj registry.Object, c *causes.Cause) bool {
					meddle(obj, c)
					return true
				}
			}
			kind.Changing = append(kind.Changing, create, &registry.ChangeHandler{Handler: execution.Handler{ID: "delete_fn"},
				Reason: causes.Delete, RequiresFinalizer: true, Fn: func(context.Context, registry.Object, *causes.Cause) (any, error) { return nil, nil }})
			cs := clients.NewCurrent(api.C)
			cs.Set(api.C)
			w := write.New(writetest.GVK, writetest.Finalizer, cs, write.FixedProbe(true), write.Timeout)
			var bodies []map[string]any
			opts := []Option{WithMemories(memory.NewStore(&memo.Memo{}, nil, nil, nil)), WithDaemons(seenDaemons{bodies: &bodies})}
			if tt.own != nil {
				opts = append(opts, WithOwnership(tt.own))
			}
			var read []map[string]any
			settings := testSettings()
			settings.Progress = seenProgress{Storage: settings.Progress, bodies: &read}
			rig := &cycleRig{API: api, r: New(objects.Kind{Registered: kind, GVK: writetest.GVK}, settings, cache, w, opts...)}
			if tt.unsent {
				rig.memory().Unwritten = unwrittenPatch()
			}
			if tt.listed {
				rig.r.Memories().Notice(tt.obj.GetUID(), client.ObjectKeyFromObject(tt.obj), true)
			}
			if _, err := rig.reconcile(t); err != nil {
				t.Fatal(err)
			}
			if api.Writes != tt.writes {
				t.Errorf("writes = %d %q, want %d", api.Writes, api.Written, tt.writes)
			}
			if !equality.Semantic.DeepEqual(cache.obj.Object, before.Object) {
				t.Errorf("the cache's object was modified:\n got %v\nwant %v", cache.obj.Object, before.Object)
			}
			// A round reads the progress from the cache's object unless a
			// handler runs in it (or a filter that runs code made the copy).
			for _, body := range read {
				if shared, want := sameMap(body, cache.obj.Object), tt.listed && !tt.when; shared != want {
					t.Errorf("the round read the progress from the cache's object itself: %v, want %v", shared, want)
				}
			}
			if tt.listed && len(read) == 0 {
				t.Error("the round read no progress")
			}
			if !tt.synced {
				if len(bodies) > 0 {
					t.Errorf("the daemons were synced %d times, want never", len(bodies))
				}
				return
			}
			if len(bodies) != 1 {
				t.Fatalf("the daemons were synced %d times, want once", len(bodies))
			}
			// Only a filter that runs code needs the cycle's own copy
			// before the daemons' sync.
			if shared := sameMap(bodies[0], cache.obj.Object); shared == tt.when {
				t.Errorf("the daemons got the cache's object itself: %v, want %v", shared, !tt.when)
			}
		})
	}
}

// putBack is a ring member's ownership under which the object's owner
// label names this member but its grant another: the label is put back.
type putBack struct{ ownership.Unshared }

func (putBack) Claim(client.Object, time.Time) ownership.Claim {
	return ownership.Claim{Kind: ownership.StandBy, PutBack: true, Why: "its owner label was edited by hand"}
}

func (putBack) PutBack(obj client.Object) map[string]any {
	return map[string]any{"metadata": map[string]any{"labels": map[string]any{"owner": "m2"}, "resourceVersion": obj.GetResourceVersion()}}
}
