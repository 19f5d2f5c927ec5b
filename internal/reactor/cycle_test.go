package reactor

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kopf-go/kopf/internal/causes"
	"github.com/kopf-go/kopf/internal/daemons"
	"github.com/kopf-go/kopf/internal/execution"
	"github.com/kopf-go/kopf/internal/registry"
	"github.com/kopf-go/kopf/pkg/memo"
	"github.com/kopf-go/kopf/pkg/patch"
)

var cycleGVK = schema.GroupVersionKind{Group: "kopf.dev", Version: "v1", Kind: "KopfExample"}

// cycleObject is an example object with the spec's field, and the
// annotations given.
func cycleObject(field string, annotations map[string]string) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"field": field}}}
	obj.SetGroupVersionKind(cycleGVK)
	obj.SetNamespace("ns")
	obj.SetName("kex")
	obj.SetUID("uid-kex")
	obj.SetAnnotations(annotations)
	// As after its first cycle, which adds the finalizer that the delete
	// handler needs and runs nothing else (the row "first sight").
	obj.SetFinalizers([]string{DefaultFinalizer})
	return obj
}

// handled is the diff-base of a spec whose field is the value.
func handled(field string) map[string]string {
	return map[string]string{"kopf.zalando.org/last-handled-configuration": `{"spec":{"field":"` + field + `"}}` + "\n"}
}

func unfinalized(obj *unstructured.Unstructured) *unstructured.Unstructured {
	obj.SetFinalizers(nil)
	return obj
}

// cycleRig is a kind's reconciler on a fake client, recording the calls
// of its handlers and the writes.
type cycleRig struct {
	r      *reconciler
	c      client.WithWatch
	calls  []string
	writes int
	// written are the patches, for the failure messages.
	written []string
	sup     *daemons.Supervisor
	// meanwhile runs once, in the first handler called: what others do
	// while it runs.
	meanwhile func()
}

// newCycleRig makes the reconciler of a kind with a create, an update, a
// resume and a delete handler whose outcome the row decides.
func newCycleRig(t *testing.T, obj *unstructured.Unstructured, outcome func(id string) (any, error), conflict, fail bool) *cycleRig {
	t.Helper()
	rig := &cycleRig{}
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(cycleGVK, meta.RESTScopeNamespace)
	builder := fake.NewClientBuilder().WithRESTMapper(mapper).WithStatusSubresource(obj.DeepCopy()).
		WithInterceptorFuncs(interceptor.Funcs{
			Patch: func(ctx context.Context, c client.WithWatch, o client.Object, p client.Patch, opts ...client.PatchOption) error {
				rig.writes++
				if data, err := p.Data(o); err == nil {
					rig.written = append(rig.written, string(data))
				}
				if conflict {
					return apierrors.NewConflict(schema.GroupResource{Group: "kopf.dev", Resource: "kopfexamples"}, o.GetName(), errors.New("changed"))
				}
				if fail {
					return apierrors.NewInternalError(errors.New("etcd is down"))
				}
				if err := preconditions(ctx, c, o, p, false); err != nil {
					return err
				}
				return c.Patch(ctx, o, p, opts...)
			},
			SubResourcePatch: func(ctx context.Context, c client.Client, sub string, o client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
				rig.writes++
				if data, err := p.Data(o); err == nil {
					rig.written = append(rig.written, sub+" "+string(data))
				}
				if err := preconditions(ctx, c, o, p, true); err != nil {
					return err
				}
				return c.SubResource(sub).Patch(ctx, o, p, opts...)
			},
		})
	rig.c = builder.WithObjects(obj).Build()
	record := func(id string) registry.ChangeFunc {
		return func(context.Context, registry.Object, *causes.Cause) (any, error) {
			rig.calls = append(rig.calls, id)
			if f := rig.meanwhile; f != nil {
				rig.meanwhile = nil
				f()
			}
			return outcome(id)
		}
	}
	kind := &registry.Kind{GVK: cycleGVK, NewObject: func() registry.Object { return &unstructured.Unstructured{} }}
	for _, h := range []struct {
		id     string
		reason causes.Reason
	}{{"create_fn", causes.Create}, {"update_fn", causes.Update}, {"resume_fn", causes.Resume}, {"delete_fn", causes.Delete}} {
		// Delete handlers are mandatory, as the facade registers them.
		kind.Changing = append(kind.Changing, &registry.ChangeHandler{Handler: execution.Handler{ID: h.id}, Reason: h.reason,
			RequiresFinalizer: h.reason == causes.Delete, Fn: record(h.id)})
	}
	s := resolved(t, Settings{})
	rig.sup = daemons.New(daemons.Settings{})
	cs := &clients{direct: rig.c}
	cs.set(rig.c)
	rig.r = newReconciler(kindObjects{kind: kind, gvk: cycleGVK}, s, cs, fixedProbe(true), rig.sup, unshared{}, newMemories(&memo.Memo{}, nil, nil))
	return rig
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
	old := cycleObject("a", nil)
	if err := rig.c.Delete(ctx, old); err != nil {
		t.Fatal(err)
	}
	if err := rig.c.Patch(ctx, old, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))); err != nil {
		t.Fatal(err)
	}
	next := cycleObject("b", nil)
	next.SetUID("uid-next")
	if err := rig.c.Create(ctx, next); err != nil {
		t.Fatal(err)
	}
}

// memory is the rig's memory of the object.
func (rig *cycleRig) memory() *memory {
	return rig.r.memories.recall("uid-kex", types.NamespacedName{Namespace: "ns", Name: "kex"})
}

// handingTo is a ring member's ownership (share.go) as a fake: every
// object is to be handed over to next; letGo's acknowledgement moves a
// label, and settled records its outcome.
type handingTo struct {
	unshared
	next    string
	settled *[]bool
}

func (h handingTo) claim(client.Object, time.Time) claim { return claim{kind: handOver, next: h.next} }

func (h handingTo) letGo(obj client.Object, next string) (map[string]any, func(bool)) {
	ack := map[string]any{"metadata": map[string]any{"labels": map[string]any{"owner": next},
		"resourceVersion": obj.GetResourceVersion()}}
	return ack, func(written bool) { *h.settled = append(*h.settled, written) }
}

// standingBy is an ownership under which no object is this replica's.
type standingBy struct{ unshared }

func (standingBy) claim(client.Object, time.Time) claim {
	return claim{kind: standBy, why: "the owner label names another member"}
}

// slowDaemons are the object's daemons as a fake, still running when
// stopped; stops records the reasons they were stopped for.
type slowDaemons struct {
	objectDaemons
	running []string
	stops   *[]daemons.StopReason
}

func (d slowDaemons) stopAndWait(_ *cycle, reason daemons.StopReason) []string {
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
	obj.SetGroupVersionKind(cycleGVK)
	if err := rig.c.Get(context.Background(), types.NamespacedName{Namespace: "ns", Name: "kex"}, obj); err != nil {
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
	deleting := cycleObject("a", handled("a"))
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
		own     ownership
		running []string
		mem     func(m *memory)
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
		{name: "first sight: the finalizer first", obj: unfinalized(cycleObject("a", nil)), outcome: succeed, calls: nil, writes: 1,
			check: func(t *testing.T, obj *unstructured.Unstructured) {
				if !slices.Contains(obj.GetFinalizers(), DefaultFinalizer) {
					t.Error("no finalizer after the first cycle")
				}
			}},
		{name: "create", obj: cycleObject("a", nil), outcome: succeed, calls: []string{"create_fn"}, writes: 2,
			check: func(t *testing.T, obj *unstructured.Unstructured) {
				if obj.GetAnnotations()["kopf.zalando.org/last-handled-configuration"] != `{"spec":{"field":"a"}}`+"\n" {
					t.Errorf("diff-base = %q", obj.GetAnnotations())
				}
				if done, _, _ := unstructured.NestedBool(obj.Object, "status", "create_fn", "done"); !done {
					t.Errorf("status = %v, want the result", obj.Object["status"])
				}
			}},
		{name: "update", obj: cycleObject("b", handled("a")), outcome: succeed, calls: []string{"update_fn"}, writes: 2,
			check: func(t *testing.T, obj *unstructured.Unstructured) {
				if !strings.Contains(obj.GetAnnotations()["kopf.zalando.org/last-handled-configuration"], `"field":"b"`) {
					t.Errorf("diff-base = %q, want the new field", obj.GetAnnotations())
				}
			}},
		// The result goes to status; the progress record, written and purged
		// in one cycle, leaves nothing to write.
		{name: "resume", obj: cycleObject("a", handled("a")), listed: true, outcome: succeed, calls: []string{"resume_fn"}, writes: 1},
		{name: "nothing changed", obj: cycleObject("a", handled("a")), outcome: succeed, calls: nil, writes: 0},
		{name: "delete", obj: deleting, outcome: succeed, calls: []string{"delete_fn"}, writes: 2,
			check: func(t *testing.T, obj *unstructured.Unstructured) {
				if obj != nil && slices.Contains(obj.GetFinalizers(), DefaultFinalizer) {
					t.Error("the finalizer stays after the delete handler")
				}
			}},
		{name: "a retry", obj: cycleObject("a", nil), outcome: func(string) (any, error) {
			return nil, execution.Temporary(errors.New("not yet"), 10*time.Second)
		}, calls: []string{"create_fn"}, writes: 1, requeue: true,
			check: func(t *testing.T, obj *unstructured.Unstructured) {
				var r map[string]any
				_ = json.Unmarshal([]byte(obj.GetAnnotations()["kopf.zalando.org/create_fn"]), &r)
				if r["retries"] != float64(1) || r["message"] != "not yet" || r["delayed"] == nil {
					t.Errorf("progress = %v, want one retry, delayed, with the message", r)
				}
			}},
		{name: "a permanent failure", obj: cycleObject("a", nil), outcome: func(string) (any, error) {
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
		{name: "an oversized diff-base", obj: cycleObject(strings.Repeat("x", 300*1024), nil), twice: true, outcome: succeed, calls: []string{"create_fn"}, writes: 1,
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
		{name: "recreated while its handler runs", obj: cycleObject("a", nil), twice: true, outcome: counted(), meanwhile: recreateKex,
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
		{name: "a vanished object", obj: unfinalized(cycleObject("a", nil)), vanish: true, outcome: succeed, calls: nil, writes: 0},
		// The status (the result) is written first; the main patch meets the
		// conflict, is kept for the next cycle, and the object is looked at
		// again soon.
		{name: "a conflict on write", obj: cycleObject("a", nil), conflict: true, outcome: succeed, calls: []string{"create_fn"}, writes: 2, requeue: true, kept: true},
		// Any other API error: the outcome is kept for the next cycle, and
		// the object is throttled (Kopf's error delays).
		{name: "a failed write", obj: cycleObject("a", nil), fail: true, outcome: succeed, calls: []string{"create_fn"}, writes: 2, requeue: true, kept: true},
		// The previous cycle's outcomes are written first, and nothing else
		// runs, though the object changed since.
		{name: "unwritten outcomes", obj: cycleObject("b", handled("a")), outcome: succeed, calls: nil, writes: 1,
			mem:   func(m *memory) { m.unwritten = unwrittenPatch() },
			wrote: []string{`"kopf.zalando.org/update_fn"`}},
		// The cache does not show this process's last write yet: nothing
		// runs on the older body; the object comes back.
		{name: "waiting for the cache", obj: cycleObject("b", handled("a")), outcome: succeed, calls: nil, writes: 0, requeue: true,
			mem: func(m *memory) {
				m.expectedVersion, m.consistencyDeadline = "999999", time.Now().Add(5*time.Second)
			}},
		// Handed over: no handler runs though the object changed; the
		// daemons are stopped as for a pause; the acknowledgement is the
		// one write, guarded by the object's version and uid.
		{name: "a handover", obj: cycleObject("b", handled("a")), own: handingTo{next: "m-b"}, outcome: succeed, calls: nil, writes: 1,
			wrote: []string{`"labels":{"owner":"m-b"},"resourceVersion":"999","uid":"uid-kex"`}, stops: []daemons.StopReason{daemons.StopOperatorPausing}, settled: []bool{true},
			check: func(t *testing.T, obj *unstructured.Unstructured) {
				if obj.GetLabels()["owner"] != "m-b" {
					t.Errorf("labels = %v, want the next owner", obj.GetLabels())
				}
			}},
		{name: "a handover waits for daemons that still run", obj: cycleObject("b", handled("a")), own: handingTo{next: "m-b"},
			running: []string{"monitor_fn"}, outcome: succeed, calls: nil, writes: 0, requeue: true,
			stops: []daemons.StopReason{daemons.StopOperatorPausing}},
		// The next owner reads the outcomes: they go before the handover.
		{name: "a handover writes unwritten outcomes first", obj: cycleObject("b", handled("a")), own: handingTo{next: "m-b"},
			mem: func(m *memory) { m.unwritten = unwrittenPatch() }, outcome: succeed, calls: nil, writes: 1,
			wrote: []string{`"kopf.zalando.org/update_fn"`}, stops: []daemons.StopReason{daemons.StopOperatorPausing}},
		{name: "stand-by", obj: cycleObject("b", handled("a")), own: standingBy{}, outcome: succeed, calls: nil, writes: 0,
			stops: []daemons.StopReason{daemons.StopOperatorPausing}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rig := newCycleRig(t, tt.obj, tt.outcome, tt.conflict, tt.fail)
			var stops []daemons.StopReason
			var settled []bool
			switch own := tt.own.(type) {
			case handingTo:
				own.settled = &settled
				rig.r.own = own
			case nil:
			default:
				rig.r.own = own
			}
			rig.r.cycles.daemons = slowDaemons{objectDaemons: rig.r.cycles.daemons, running: tt.running, stops: &stops}
			if tt.mem != nil {
				tt.mem(rig.memory())
			}
			if tt.meanwhile != nil {
				rig.meanwhile = func() { tt.meanwhile(t, rig) }
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer func() { cancel(); _ = rig.sup.Start(ctx) }()
			if tt.vanish {
				if err := rig.c.Delete(context.Background(), tt.obj.DeepCopy()); err != nil {
					t.Fatal(err)
				}
				rig.r.memories.notice(tt.obj.GetUID(), types.NamespacedName{Namespace: "ns", Name: "kex"}, true)
			}
			if tt.listed {
				rig.r.memories.notice(tt.obj.GetUID(), types.NamespacedName{Namespace: "ns", Name: "kex"}, true)
			}
			result, err := rig.reconcile(t)
			if tt.twice && err == nil {
				result, err = rig.reconcile(t)
			}
			if (err != nil) != tt.wantErr {
				t.Fatalf("Reconcile() error = %v, want error: %v", err, tt.wantErr)
			}
			if !slices.Equal(rig.calls, tt.calls) {
				t.Errorf("handlers called: %v, want %v", rig.calls, tt.calls)
			}
			if rig.writes != tt.writes {
				t.Errorf("writes: %d, want %d: %q", rig.writes, tt.writes, rig.written)
			}
			if got := result.RequeueAfter > 0; got != tt.requeue {
				t.Errorf("requeue after %s (error %v), want a requeue: %v", result.RequeueAfter, err, tt.requeue)
			}
			for i, w := range tt.wrote {
				if i >= len(rig.written) || !strings.Contains(rig.written[i], w) {
					t.Errorf("written: %q, want %q in write %d", rig.written, w, i+1)
				}
			}
			if !slices.Equal(stops, tt.stops) {
				t.Errorf("daemons stopped for %v, want %v", stops, tt.stops)
			}
			if !slices.Equal(settled, tt.settled) {
				t.Errorf("handover settled %v, want %v", settled, tt.settled)
			}
			if tt.vanish && rig.r.memories.size() != 0 {
				t.Error("the vanished object is still remembered")
			}
			// (After the check above: recalling a memory makes one.)
			if kept := rig.memory().unwritten != nil; kept != tt.kept {
				t.Errorf("unwritten outcomes kept: %v, want %v", kept, tt.kept)
			}
			if tt.check != nil {
				tt.check(t, rig.read(t))
			}
		})
	}
}
