package cycle

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kopf-go/kopf/internal/clients"
	"github.com/kopf-go/kopf/internal/cycle/cycletest"
	"github.com/kopf-go/kopf/internal/daemons"
	"github.com/kopf-go/kopf/internal/execution"
	"github.com/kopf-go/kopf/internal/memory"
	"github.com/kopf-go/kopf/internal/objects"
	"github.com/kopf-go/kopf/internal/ownership"
	"github.com/kopf-go/kopf/internal/write"
	"github.com/kopf-go/kopf/internal/write/writetest"
	"github.com/kopf-go/kopf/pkg/diffbase"
	"github.com/kopf-go/kopf/pkg/indexing"
	"github.com/kopf-go/kopf/pkg/memo"
	"github.com/kopf-go/kopf/pkg/patch"
	"github.com/kopf-go/kopf/pkg/progress"
)

// testSettings are the engine's defaults (Kopf's), resolved.
func testSettings() Settings {
	return Settings{Finalizer: writetest.Finalizer, ConsistencyTimeout: 5 * time.Second,
		ErrorDelays: []time.Duration{time.Second, time.Second, 2 * time.Second},
		Progress:    progress.NewSmart(), DiffBase: diffbase.NewAnnotations(), Indices: &indexing.Indices{}, Clock: clock.RealClock{},
		Defaults: execution.Defaults{Errors: execution.ErrorsTemporary, Backoff: time.Minute}}
}

// cycleRig is a kind's cycle on a fake API server, recording the calls
// of its handlers and the writes.
type cycleRig struct {
	*cycletest.API
	handlers *cycletest.Handlers
	r        *Reconciler
}

// newCycleRig makes the cycle of a kind with a create, an update, a
// resume and a delete handler whose outcome the row decides, with the
// collaborators that opts give.
func newCycleRig(t *testing.T, obj *unstructured.Unstructured, outcome func(id string) (any, error), opts ...Option) *cycleRig {
	t.Helper()
	api := cycletest.NewAPI(t, obj)
	h := &cycletest.Handlers{Outcome: outcome}
	kind := objects.Kind{Registered: h.Kind(), GVK: writetest.GVK}
	cs := clients.NewCurrent(api.C)
	cs.Set(api.C)
	w := write.New(writetest.GVK, writetest.Finalizer, cs, write.FixedProbe(true), write.Timeout)
	opts = append([]Option{WithMemories(memory.NewStore(&memo.Memo{}, nil, nil, nil))}, opts...)
	return &cycleRig{API: api, handlers: h, r: New(kind, testSettings(), cs, w, opts...)}
}

// counted is an outcome whose result numbers the handlers' calls.
func counted() func(string) (any, error) {
	n := 0
	return func(string) (any, error) {
		n++
		return map[string]any{"call": n}, nil
	}
}

// recreateKex deletes the example object (its finalizer removed by hand)
// and creates another under its name, with another uid and field.
func recreateKex(t *testing.T, rig *cycleRig) {
	t.Helper()
	ctx := context.Background()
	old := writetest.Object("a", nil)
	if err := rig.C.Delete(ctx, old); err != nil {
		t.Fatal(err)
	}
	if err := rig.C.Patch(ctx, old, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))); err != nil {
		t.Fatal(err)
	}
	next := writetest.Object("b", nil)
	next.SetUID("uid-next")
	if err := rig.C.Create(ctx, next); err != nil {
		t.Fatal(err)
	}
}

// memory is the rig's memory of the object.
func (rig *cycleRig) memory() *memory.Object {
	return rig.r.Memories().Recall("uid-kex", types.NamespacedName{Namespace: "ns", Name: "kex"})
}

// handingTo is a ring member's ownership (share.go) as a fake: every
// object is to be handed over to next; letGo's acknowledgement moves a
// label, and settled records its outcome.
type handingTo struct {
	ownership.Unshared
	next    string
	settled *[]bool
}

func (h handingTo) Claim(client.Object, time.Time) ownership.Claim {
	return ownership.Claim{Kind: ownership.HandOver, Next: h.next}
}

func (h handingTo) LetGo(obj client.Object, next string) (map[string]any, func(bool)) {
	ack := map[string]any{"metadata": map[string]any{"labels": map[string]any{"owner": next},
		"resourceVersion": obj.GetResourceVersion()}}
	return ack, func(written bool) { *h.settled = append(*h.settled, written) }
}

// standingBy is an ownership under which no object is this replica's.
type standingBy struct{ ownership.Unshared }

func (standingBy) Claim(client.Object, time.Time) ownership.Claim {
	return ownership.Claim{Kind: ownership.StandBy, Why: "the owner label names another member"}
}

// slowDaemons are the object's daemons as a fake, still running when
// stopped; stops records the reasons they were stopped for.
type slowDaemons struct {
	noDaemons
	running []string
	stops   *[]daemons.StopReason
}

func (d slowDaemons) StopAndWait(_ Object, reason daemons.StopReason) []string {
	*d.stops = append(*d.stops, reason)
	return d.running
}

// unwrittenPatch is what a cycle could not write: a handler's progress.
func unwrittenPatch() *patch.Patch {
	p := patch.New()
	p.SetAnnotation("kopf.zalando.org/update_fn", `{"started":"2026-12-01T00:00:00.000000Z","retries":1}`)
	return p
}

func (rig *cycleRig) reconcile(t *testing.T) (reconcile.Result, error) {
	t.Helper()
	return rig.r.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "kex"}})
}

func (rig *cycleRig) read(t *testing.T) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(writetest.GVK)
	if err := rig.C.Get(context.Background(), types.NamespacedName{Namespace: "ns", Name: "kex"}, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		t.Fatal(err)
	}
	return obj
}

// Whole cycles, from the request to the writes, with no API server: what
// was read (the object, as the row sets it up), which handlers ran, what
// was written and what was asked of the queue.
func TestCycles(t *testing.T) {
	deleting := writetest.Object("a", writetest.Handled("a"))
	deleting.SetDeletionTimestamp(&metav1.Time{Time: time.Now()})
	succeed := func(string) (any, error) { return map[string]any{"done": true}, nil }
	tests := []struct {
		name     string
		obj      *unstructured.Unstructured
		listed   bool // found in the first listing: resume handlers are due
		outcome  func(id string) (any, error)
		conflict bool
		fail     bool // the API server fails every write of the object
		vanish   bool
		twice    bool // a second cycle follows the first
		// own is whose the object is (unshared: this replica's); running
		// are daemons that do not exit when stopped; mem sets up the
		// memory of earlier cycles.
		own     ownership.Ownership
		running []string
		mem     func(m *memory.Object)
		// meanwhile is what others do while the first handler runs.
		meanwhile func(t *testing.T, rig *cycleRig)

		calls   []string
		writes  int
		wrote   []string // in the written patches, in this order
		requeue bool     // RequeueAfter > 0
		wantErr bool
		stops   []daemons.StopReason // the daemons' stops asked for
		settled []bool               // the handover's settle calls
		kept    bool                 // the memory keeps unwritten outcomes
		check   func(t *testing.T, obj *unstructured.Unstructured)
	}{
		{name: "first sight: the finalizer first", obj: writetest.Unfinalized(writetest.Object("a", nil)), outcome: succeed, calls: nil, writes: 1,
			check: func(t *testing.T, obj *unstructured.Unstructured) {
				if !slices.Contains(obj.GetFinalizers(), writetest.Finalizer) {
					t.Error("no finalizer after the first cycle")
				}
			}},
		{name: "create", obj: writetest.Object("a", nil), outcome: succeed, calls: []string{"create_fn"}, writes: 2,
			check: func(t *testing.T, obj *unstructured.Unstructured) {
				if obj.GetAnnotations()["kopf.zalando.org/last-handled-configuration"] != `{"spec":{"field":"a"}}`+"\n" {
					t.Errorf("diff-base = %q", obj.GetAnnotations())
				}
				if done, _, _ := unstructured.NestedBool(obj.Object, "status", "create_fn", "done"); !done {
					t.Errorf("status = %v, want the result", obj.Object["status"])
				}
			}},
		{name: "update", obj: writetest.Object("b", writetest.Handled("a")), outcome: succeed, calls: []string{"update_fn"}, writes: 2,
			check: func(t *testing.T, obj *unstructured.Unstructured) {
				if !strings.Contains(obj.GetAnnotations()["kopf.zalando.org/last-handled-configuration"], `"field":"b"`) {
					t.Errorf("diff-base = %q, want the new field", obj.GetAnnotations())
				}
			}},
		// The result goes to status; the progress record, written and purged
		// in one cycle, leaves nothing to write.
		{name: "resume", obj: writetest.Object("a", writetest.Handled("a")), listed: true, outcome: succeed, calls: []string{"resume_fn"}, writes: 1},
		{name: "nothing changed", obj: writetest.Object("a", writetest.Handled("a")), outcome: succeed, calls: nil, writes: 0},
		{name: "delete", obj: deleting, outcome: succeed, calls: []string{"delete_fn"}, writes: 2,
			check: func(t *testing.T, obj *unstructured.Unstructured) {
				if obj != nil && slices.Contains(obj.GetFinalizers(), writetest.Finalizer) {
					t.Error("the finalizer stays after the delete handler")
				}
			}},
		{name: "a retry", obj: writetest.Object("a", nil), outcome: func(string) (any, error) {
			return nil, execution.Temporary(errors.New("not yet"), 10*time.Second)
		}, calls: []string{"create_fn"}, writes: 1, requeue: true,
			check: func(t *testing.T, obj *unstructured.Unstructured) {
				var r map[string]any
				_ = json.Unmarshal([]byte(obj.GetAnnotations()["kopf.zalando.org/create_fn"]), &r)
				if r["retries"] != float64(1) || r["message"] != "not yet" || r["delayed"] == nil {
					t.Errorf("progress = %v, want one retry, delayed, with the message", r)
				}
			}},
		{name: "a permanent failure", obj: writetest.Object("a", nil), outcome: func(string) (any, error) {
			return nil, execution.NewPermanentError("nope")
		}, calls: []string{"create_fn"}, writes: 1,
			check: func(t *testing.T, obj *unstructured.Unstructured) {
				if obj.GetAnnotations()["kopf.zalando.org/last-handled-configuration"] == "" {
					t.Error("no diff-base after a permanent failure: the cause is over, as in Kopf")
				}
			}},
		// A diff-base too large for the annotations stays in memory instead:
		// the handler ran, the result is written, the annotation is not.
		// A second cycle finds the object handled: the memory has it.
		{name: "an oversized diff-base", obj: writetest.Object(strings.Repeat("x", 300*1024), nil), twice: true, outcome: succeed, calls: []string{"create_fn"}, writes: 1,
			check: func(t *testing.T, obj *unstructured.Unstructured) {
				if _, ok := obj.GetAnnotations()["kopf.zalando.org/last-handled-configuration"]; ok {
					t.Error("the oversized diff-base was written into the annotations")
				}
			}},
		// The object is deleted and created anew under its name while its
		// create handler runs: nothing of the first one's outcome lands on
		// the second (the status patch's version conflicts, and the live
		// read finds another uid), and the next cycle handles the second
		// as the new object it is.
		{name: "recreated while its handler runs", obj: writetest.Object("a", nil), twice: true, outcome: counted(), meanwhile: recreateKex,
			// The test's own removal of the finalizer is the first write; the
			// status conflict's look at the live object is the third (a
			// no-op patch naming the first object's uid, refused).
			calls: []string{"create_fn", "create_fn"}, writes: 5,
			wrote: []string{`"finalizers":null`, `status {"metadata":{"resourceVersion":"999"},"status":{"create_fn":{"call":1}}}`,
				`{"metadata":{"uid":"uid-kex"}}`, `"call":2`, `"uid":"uid-next"`},
			check: func(t *testing.T, obj *unstructured.Unstructured) {
				call, _, _ := unstructured.NestedInt64(obj.Object, "status", "create_fn", "call")
				if obj.GetUID() != "uid-next" || call != 2 {
					t.Errorf("the object under the name: uid %s, status %v; want uid-next with the second call's result", obj.GetUID(), obj.Object["status"])
				}
				if obj.GetAnnotations()["kopf.zalando.org/last-handled-configuration"] != `{"spec":{"field":"b"}}`+"\n" {
					t.Errorf("diff-base = %q, want the second object's", obj.GetAnnotations())
				}
			}},
		{name: "a vanished object", obj: writetest.Unfinalized(writetest.Object("a", nil)), vanish: true, outcome: succeed, calls: nil, writes: 0},
		// The status (the result) is written first; the main patch meets the
		// conflict, is kept for the next cycle, and the object is looked at
		// again soon.
		{name: "a conflict on write", obj: writetest.Object("a", nil), conflict: true, outcome: succeed, calls: []string{"create_fn"}, writes: 2, requeue: true, kept: true},
		// Any other API error: the outcome is kept for the next cycle, and
		// the object is throttled (Kopf's error delays).
		{name: "a failed write", obj: writetest.Object("a", nil), fail: true, outcome: succeed, calls: []string{"create_fn"}, writes: 2, requeue: true, kept: true},
		// The previous cycle's outcomes are written first, and nothing else
		// runs, though the object changed since.
		{name: "unwritten outcomes", obj: writetest.Object("b", writetest.Handled("a")), outcome: succeed, calls: nil, writes: 1,
			mem:   func(m *memory.Object) { m.Unwritten = unwrittenPatch() },
			wrote: []string{`"kopf.zalando.org/update_fn"`}},
		// The cache does not show this process's last write yet: nothing
		// runs on the older body; the object comes back.
		{name: "waiting for the cache", obj: writetest.Object("b", writetest.Handled("a")), outcome: succeed, calls: nil, writes: 0, requeue: true,
			mem: func(m *memory.Object) {
				m.ExpectedVersion, m.ConsistencyDeadline = "999999", time.Now().Add(5*time.Second)
			}},
		// Handed over: no handler runs though the object changed; the
		// daemons are stopped as for a pause; the acknowledgement is the
		// one write, guarded by the object's version and uid.
		{name: "a handover", obj: writetest.Object("b", writetest.Handled("a")), own: handingTo{next: "m-b"}, outcome: succeed, calls: nil, writes: 1,
			wrote: []string{`"labels":{"owner":"m-b"},"resourceVersion":"999","uid":"uid-kex"`}, stops: []daemons.StopReason{daemons.StopOperatorPausing}, settled: []bool{true},
			check: func(t *testing.T, obj *unstructured.Unstructured) {
				if obj.GetLabels()["owner"] != "m-b" {
					t.Errorf("labels = %v, want the next owner", obj.GetLabels())
				}
			}},
		{name: "a handover waits for daemons that still run", obj: writetest.Object("b", writetest.Handled("a")), own: handingTo{next: "m-b"},
			running: []string{"monitor_fn"}, outcome: succeed, calls: nil, writes: 0, requeue: true,
			stops: []daemons.StopReason{daemons.StopOperatorPausing}},
		// The next owner reads the outcomes: they go before the handover.
		{name: "a handover writes unwritten outcomes first", obj: writetest.Object("b", writetest.Handled("a")), own: handingTo{next: "m-b"},
			mem: func(m *memory.Object) { m.Unwritten = unwrittenPatch() }, outcome: succeed, calls: nil, writes: 1,
			wrote: []string{`"kopf.zalando.org/update_fn"`}, stops: []daemons.StopReason{daemons.StopOperatorPausing}},
		{name: "stand-by", obj: writetest.Object("b", writetest.Handled("a")), own: standingBy{}, outcome: succeed, calls: nil, writes: 0,
			stops: []daemons.StopReason{daemons.StopOperatorPausing}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stops []daemons.StopReason
			var settled []bool
			opts := []Option{WithDaemons(slowDaemons{running: tt.running, stops: &stops})}
			switch own := tt.own.(type) {
			case handingTo:
				own.settled = &settled
				opts = append(opts, WithOwnership(own))
			case nil:
			default:
				opts = append(opts, WithOwnership(own))
			}
			rig := newCycleRig(t, tt.obj, tt.outcome, opts...)
			rig.Conflict, rig.Fail = tt.conflict, tt.fail
			if tt.mem != nil {
				tt.mem(rig.memory())
			}
			if tt.meanwhile != nil {
				rig.handlers.Meanwhile = func() { tt.meanwhile(t, rig) }
			}
			if tt.vanish {
				if err := rig.C.Delete(context.Background(), tt.obj.DeepCopy()); err != nil {
					t.Fatal(err)
				}
				rig.r.Memories().Notice(tt.obj.GetUID(), types.NamespacedName{Namespace: "ns", Name: "kex"}, true)
			}
			if tt.listed {
				rig.r.Memories().Notice(tt.obj.GetUID(), types.NamespacedName{Namespace: "ns", Name: "kex"}, true)
			}
			result, err := rig.reconcile(t)
			if tt.twice && err == nil {
				result, err = rig.reconcile(t)
			}
			if (err != nil) != tt.wantErr {
				t.Fatalf("Reconcile() error = %v, want error: %v", err, tt.wantErr)
			}
			if !slices.Equal(rig.handlers.Calls, tt.calls) {
				t.Errorf("handlers called: %v, want %v", rig.handlers.Calls, tt.calls)
			}
			if rig.Writes != tt.writes {
				t.Errorf("writes: %d, want %d: %q", rig.Writes, tt.writes, rig.Written)
			}
			if got := result.RequeueAfter > 0; got != tt.requeue {
				t.Errorf("requeue after %s (error %v), want a requeue: %v", result.RequeueAfter, err, tt.requeue)
			}
			for i, w := range tt.wrote {
				if i >= len(rig.Written) || !strings.Contains(rig.Written[i], w) {
					t.Errorf("written: %q, want %q in write %d", rig.Written, w, i+1)
				}
			}
			if !slices.Equal(stops, tt.stops) {
				t.Errorf("daemons stopped for %v, want %v", stops, tt.stops)
			}
			if !slices.Equal(settled, tt.settled) {
				t.Errorf("handover settled %v, want %v", settled, tt.settled)
			}
			if tt.vanish && rig.r.Memories().Size() != 0 {
				t.Error("the vanished object is still remembered")
			}
			// (After the check above: recalling a memory makes one.)
			if kept := rig.memory().Unwritten != nil; kept != tt.kept {
				t.Errorf("unwritten outcomes kept: %v, want %v", kept, tt.kept)
			}
			if tt.check != nil {
				tt.check(t, rig.read(t))
			}
		})
	}
}

// staleReader is a cache that lags: it shows obj whatever the API server
// has now.
type staleReader struct{ obj *unstructured.Unstructured }

func (r *staleReader) Get(_ context.Context, _ client.ObjectKey, o client.Object, _ ...client.GetOption) error {
	r.obj.DeepCopyInto(o.(*unstructured.Unstructured))
	return nil
}
