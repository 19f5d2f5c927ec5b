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
	"github.com/kopf-go/kopf/internal/memo"
	"github.com/kopf-go/kopf/internal/registry"
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
}

// newCycleRig makes the reconciler of a kind with a create, an update, a
// resume and a delete handler whose outcome the row decides.
func newCycleRig(t *testing.T, obj *unstructured.Unstructured, outcome func(id string) (any, error), conflict bool) *cycleRig {
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
				return c.Patch(ctx, o, p, opts...)
			},
			SubResourcePatch: func(ctx context.Context, c client.Client, sub string, o client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
				rig.writes++
				if data, err := p.Data(o); err == nil {
					rig.written = append(rig.written, sub+" "+string(data))
				}
				return c.SubResource(sub).Patch(ctx, o, p, opts...)
			},
		})
	rig.c = builder.WithObjects(obj).Build()
	record := func(id string) registry.ChangeFunc {
		return func(context.Context, registry.Object, *causes.Cause) (any, error) {
			rig.calls = append(rig.calls, id)
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
	s := Settings{}.WithDefaults()
	rig.sup = daemons.New(daemons.Settings{})
	cs := &clients{direct: rig.c}
	cs.set(rig.c)
	rig.r = newReconciler(kindObjects{kind: kind, gvk: cycleGVK}, s, cs, fixedProbe(true), rig.sup, unshared{}, newMemories(&memo.Memo{}, nil, nil))
	return rig
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
		vanish   bool
		twice    bool // a second cycle follows the first

		calls   []string
		writes  int
		requeue bool // RequeueAfter > 0
		wantErr bool
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
		{name: "a vanished object", obj: unfinalized(cycleObject("a", nil)), vanish: true, outcome: succeed, calls: nil, writes: 0},
		// The status (the result) is written first; the main patch meets the
		// conflict, is kept for the next cycle, and the object is looked at
		// again soon.
		{name: "a conflict on write", obj: cycleObject("a", nil), conflict: true, outcome: succeed, calls: []string{"create_fn"}, writes: 2, requeue: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rig := newCycleRig(t, tt.obj, tt.outcome, tt.conflict)
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
			if tt.vanish && rig.r.memories.size() != 0 {
				t.Error("the vanished object is still remembered")
			}
			if tt.check != nil {
				tt.check(t, rig.read(t))
			}
		})
	}
}
