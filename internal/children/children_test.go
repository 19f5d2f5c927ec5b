package children

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kopf-go/kopf/internal/execution"
	"github.com/kopf-go/kopf/internal/memory"
	"github.com/kopf-go/kopf/internal/objects"
	"github.com/kopf-go/kopf/internal/registry"
	"github.com/kopf-go/kopf/pkg/cause"
	"github.com/kopf-go/kopf/pkg/fields"
	"github.com/kopf-go/kopf/pkg/filter"
	"github.com/kopf-go/kopf/pkg/memo"
)

var ownerGVK = schema.GroupVersionKind{Group: "kopf.dev", Version: "v1", Kind: "KopfExample"}

// owners is a reader of owners by name.
type owners map[types.NamespacedName]*unstructured.Unstructured

func (o owners) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	owner, ok := o[key]
	if !ok {
		return apierrors.NewNotFound(schema.GroupResource{Group: "kopf.dev", Resource: "kopfexamples"}, key.Name)
	}
	owner.DeepCopyInto(obj.(*unstructured.Unstructured))
	return nil
}

func (owners) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("not listed")
}

func newOwner(name, uid string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(ownerGVK)
	u.SetNamespace("ns")
	u.SetName(name)
	u.SetUID(types.UID(uid))
	return u
}

func newChild(version, field string, owner *unstructured.Unstructured) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "child", ResourceVersion: version,
		Labels: map[string]string{"app": "x"}}, Data: map[string]string{"field": field}}
	if owner != nil {
		cm.OwnerReferences = []metav1.OwnerReference{{APIVersion: "kopf.dev/v1", Kind: "KopfExample", Name: owner.GetName(),
			UID: owner.GetUID(), Controller: new(true)}}
	}
	return cm
}

// call is one call of a child handler, as the test records it.
type call struct {
	ID       string
	Reason   cause.ChildReason
	Owner    string
	Field    string
	Old, New any
	Retry    int
}

type fixture struct {
	w     *Watch
	clock *clocktesting.FakeClock
	calls []call
	// fail makes the handlers fail with that error, while it is set.
	fail error
}

func newFixture(t *testing.T, owned owners, hs ...*registry.ChildHandler) *fixture {
	t.Helper()
	f := &fixture{clock: clocktesting.NewFakeClock(time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC))}
	for _, h := range hs {
		id := h.ID
		h.Fn = func(_ context.Context, owner, child registry.Object, c *cause.Child) error {
			f.calls = append(f.calls, call{ID: id, Reason: c.Reason, Owner: owner.GetName(), Field: child.(*corev1.ConfigMap).Data["field"],
				Old: pick(c.Old), New: pick(c.New), Retry: c.Retry})
			return f.fail
		}
	}
	f.w = New(Kind{
		Owner:  objects.Kind{Registered: &registry.Kind{NewObject: func() registry.Object { return &unstructured.Unstructured{} }}, GVK: ownerGVK},
		Owners: owned, Namespaced: true,
		Child:    &registry.ChildKind{NewObject: func() registry.Object { return &corev1.ConfigMap{} }, Handlers: hs},
		ChildGVK: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"},
		Memories: memory.NewStore(&memo.Memo{}, nil, nil, nil), Clock: f.clock,
		Defaults: execution.Defaults{Errors: execution.ErrorsTemporary, Backoff: time.Minute},
		Context:  func(ctx context.Context, _ logr.Logger) context.Context { return ctx },
		Label:    "kopfexamples.kopf.dev", Log: logr.Discard(),
	})
	return f
}

// pick is data.field of a whole child, or the value of a field handler.
func pick(v any) any {
	if m, ok := v.(map[string]any); ok {
		field, _ := fields.Resolve(m, fields.Parse("data.field"))
		return field
	}
	return v
}

func childHandler(id string) *registry.ChildHandler {
	h := &registry.ChildHandler{}
	h.ID = id
	return h
}

func (f *fixture) reconcile(t *testing.T) reconcile.Result {
	t.Helper()
	res, err := f.w.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "child"}})
	if err != nil {
		t.Fatalf("Reconcile() error = %v", err)
	}
	return res
}

// What became of a child between two reconciles is told once, merged.
func TestObserveMerges(t *testing.T) {
	owner := newOwner("owner", "uid-1")
	tests := []struct {
		name       string
		events     func(w *Watch) []bool
		wantQueued []bool
		want       []call
	}{{
		name: "existing",
		events: func(w *Watch) []bool {
			return []bool{w.Observe(cause.ChildExisting, nil, newChild("1", "a", owner))}
		},
		wantQueued: []bool{true},
		want:       []call{{ID: "h", Reason: cause.ChildExisting, Owner: "owner", Field: "a", New: "a"}},
	}, {
		name: "created, then changed twice: created, as it is now",
		events: func(w *Watch) []bool {
			return []bool{
				w.Observe(cause.ChildCreated, nil, newChild("1", "a", owner)),
				w.Observe(cause.ChildChanged, newChild("1", "a", owner), newChild("2", "b", owner)),
				w.Observe(cause.ChildChanged, newChild("2", "b", owner), newChild("3", "c", owner)),
			}
		},
		wantQueued: []bool{true, true, true},
		want:       []call{{ID: "h", Reason: cause.ChildCreated, Owner: "owner", Field: "c", New: "c"}},
	}, {
		name: "changed twice: from the first state to the last",
		events: func(w *Watch) []bool {
			return []bool{
				w.Observe(cause.ChildChanged, newChild("1", "a", owner), newChild("2", "b", owner)),
				w.Observe(cause.ChildChanged, newChild("2", "b", owner), newChild("3", "c", owner)),
			}
		},
		wantQueued: []bool{true, true},
		want:       []call{{ID: "h", Reason: cause.ChildChanged, Owner: "owner", Field: "c", Old: "a", New: "c"}},
	}, {
		name: "changed, then deleted: deleted, from its last state",
		events: func(w *Watch) []bool {
			return []bool{
				w.Observe(cause.ChildChanged, newChild("1", "a", owner), newChild("2", "b", owner)),
				w.Observe(cause.ChildDeleted, newChild("2", "b", owner), nil),
			}
		},
		wantQueued: []bool{true, true},
		want:       []call{{ID: "h", Reason: cause.ChildDeleted, Owner: "owner", Field: "b", Old: "b"}},
	}, {
		name: "created, then deleted: deleted",
		events: func(w *Watch) []bool {
			return []bool{
				w.Observe(cause.ChildCreated, nil, newChild("1", "a", owner)),
				w.Observe(cause.ChildDeleted, newChild("1", "a", owner), nil),
			}
		},
		wantQueued: []bool{true, true},
		want:       []call{{ID: "h", Reason: cause.ChildDeleted, Owner: "owner", Field: "a", Old: "a"}},
	}, {
		name: "deleted, then created again: a new child",
		events: func(w *Watch) []bool {
			return []bool{
				w.Observe(cause.ChildDeleted, newChild("1", "a", owner), nil),
				w.Observe(cause.ChildCreated, nil, newChild("2", "b", owner)),
			}
		},
		wantQueued: []bool{true, true},
		want:       []call{{ID: "h", Reason: cause.ChildCreated, Owner: "owner", Field: "b", New: "b"}},
	}, {
		name: "a new resourceVersion alone: nothing",
		events: func(w *Watch) []bool {
			return []bool{w.Observe(cause.ChildChanged, newChild("1", "a", owner), newChild("2", "a", owner))}
		},
		wantQueued: []bool{false},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := childHandler("h")
			h.Field = fields.Parse("data.field")
			f := newFixture(t, owners{{Namespace: "ns", Name: "owner"}: owner}, h)
			if diff := cmp.Diff(tt.wantQueued, tt.events(f.w)); diff != "" {
				t.Errorf("queued (-want +got):\n%s", diff)
			}
			if res := f.reconcile(t); res.RequeueAfter != 0 {
				t.Errorf("requeued after %s, want not", res.RequeueAfter)
			}
			if diff := cmp.Diff(tt.want, f.calls); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
			f.calls = nil
			f.reconcile(t)
			if len(f.calls) > 0 {
				t.Errorf("a second reconcile called %v, want nothing", f.calls)
			}
		})
	}
}

// A failing handler is retried after its delay, with its retry count, and
// not the handlers that succeeded; a new event starts over.
func TestReconcileRetries(t *testing.T) {
	owner := newOwner("owner", "uid-1")
	f := newFixture(t, owners{{Namespace: "ns", Name: "owner"}: owner}, childHandler("first"), childHandler("second"))
	f.w.Observe(cause.ChildCreated, nil, newChild("1", "a", owner))
	f.fail = execution.Temporary(errors.New("not yet"), 5*time.Second)
	if res := f.reconcile(t); res.RequeueAfter != 5*time.Second {
		t.Fatalf("requeued after %s, want 5s", res.RequeueAfter)
	}
	f.clock.Step(2 * time.Second)
	if res := f.reconcile(t); res.RequeueAfter != 3*time.Second {
		t.Errorf("too early: requeued after %s, want the 3s left", res.RequeueAfter)
	}
	f.clock.Step(3 * time.Second)
	f.fail = nil
	if res := f.reconcile(t); res.RequeueAfter != 0 {
		t.Errorf("requeued after %s, want done", res.RequeueAfter)
	}
	want := []call{
		{ID: "first", Reason: cause.ChildCreated, Owner: "owner", Field: "a", New: "a"},
		{ID: "second", Reason: cause.ChildCreated, Owner: "owner", Field: "a", New: "a"},
		{ID: "first", Reason: cause.ChildCreated, Owner: "owner", Field: "a", New: "a", Retry: 1},
		{ID: "second", Reason: cause.ChildCreated, Owner: "owner", Field: "a", New: "a", Retry: 1},
	}
	if diff := cmp.Diff(want, f.calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}

	// A permanent failure ends the handling; the next change starts anew.
	f.calls = nil
	f.fail = execution.Permanent(errors.New("never"))
	f.w.Observe(cause.ChildChanged, newChild("1", "a", owner), newChild("2", "b", owner))
	if res := f.reconcile(t); res.RequeueAfter != 0 {
		t.Errorf("a permanent failure requeued after %s", res.RequeueAfter)
	}
	f.fail = nil
	f.w.Observe(cause.ChildChanged, newChild("2", "b", owner), newChild("3", "c", owner))
	f.reconcile(t)
	if len(f.calls) != 4 || f.calls[2].Retry != 0 || f.calls[2].Field != "c" {
		t.Errorf("calls = %+v, want two failures, then both handlers anew for c", f.calls)
	}
}

// A handler that panics fails; it is retried after the backoff.
func TestReconcilePanics(t *testing.T) {
	owner := newOwner("owner", "uid-1")
	h := childHandler("h")
	f := newFixture(t, owners{{Namespace: "ns", Name: "owner"}: owner})
	h.Fn = func(context.Context, registry.Object, registry.Object, *cause.Child) error { panic("boom") }
	f.w.k.Child.Handlers = []*registry.ChildHandler{h}
	f.w.Observe(cause.ChildCreated, nil, newChild("1", "a", owner))
	if res := f.reconcile(t); res.RequeueAfter != time.Minute {
		t.Errorf("requeued after %s, want the backoff of 1m", res.RequeueAfter)
	}
}

// Filters test the child: labels, and with a field, its change.
func TestReconcileFilters(t *testing.T) {
	owner := newOwner("owner", "uid-1")
	labelled := childHandler("labelled")
	labelled.Labels = map[string]registry.Filter{"app": filter.Equals("y")}
	field := childHandler("field")
	field.Field = fields.Parse("data.field")
	valued := childHandler("valued")
	valued.Field, valued.Value = fields.Parse("data.field"), filter.Equals("b")
	f := newFixture(t, owners{{Namespace: "ns", Name: "owner"}: owner}, labelled, field, valued)

	child := newChild("1", "a", owner)
	relabelled := newChild("2", "a", owner)
	relabelled.Labels["app"] = "z"
	f.w.Observe(cause.ChildChanged, child, relabelled)
	f.reconcile(t)
	if len(f.calls) != 0 {
		t.Errorf("a change of a label that no filter wants called %+v", f.calls)
	}
	f.w.Observe(cause.ChildChanged, relabelled, newChild("3", "b", owner))
	f.reconcile(t)
	want := []call{
		{ID: "field", Reason: cause.ChildChanged, Owner: "owner", Field: "b", Old: "a", New: "b"},
		{ID: "valued", Reason: cause.ChildChanged, Owner: "owner", Field: "b", Old: "a", New: "b"},
	}
	if diff := cmp.Diff(want, f.calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}

// A child whose owner is not there, is another object of the name, or is
// being deleted, has nobody to tell; nor one without a controller.
func TestReconcileWithoutOwner(t *testing.T) {
	deleting := newOwner("deleting", "uid-2")
	deleting.SetDeletionTimestamp(&metav1.Time{Time: time.Now()})
	owned := owners{
		{Namespace: "ns", Name: "replaced"}: newOwner("replaced", "uid-new"),
		{Namespace: "ns", Name: "deleting"}: deleting,
	}
	for name, child := range map[string]*corev1.ConfigMap{
		"gone":          newChild("1", "a", newOwner("gone", "uid-1")),
		"replaced":      newChild("1", "a", newOwner("replaced", "uid-old")),
		"deleting":      newChild("1", "a", deleting),
		"no controller": newChild("1", "a", nil),
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, owned, childHandler("h"))
			f.w.Observe(cause.ChildCreated, nil, child)
			if res := f.reconcile(t); res.RequeueAfter != 0 || len(f.calls) != 0 {
				t.Errorf("calls = %+v, requeue after %s; want none", f.calls, res.RequeueAfter)
			}
		})
	}
}

// An event that comes while the handlers run keeps the child pending.
func TestReconcileKeepsLaterEvents(t *testing.T) {
	owner := newOwner("owner", "uid-1")
	h := childHandler("h")
	f := newFixture(t, owners{{Namespace: "ns", Name: "owner"}: owner})
	var seen []string
	h.Fn = func(_ context.Context, _, child registry.Object, _ *cause.Child) error {
		seen = append(seen, child.(*corev1.ConfigMap).Data["field"])
		if len(seen) == 1 {
			f.w.Observe(cause.ChildChanged, newChild("1", "a", owner), newChild("2", "b", owner))
		}
		return nil
	}
	f.w.k.Child.Handlers = []*registry.ChildHandler{h}
	f.w.Observe(cause.ChildCreated, nil, newChild("1", "a", owner))
	f.reconcile(t)
	f.reconcile(t)
	if diff := cmp.Diff([]string{"a", "b"}, seen); diff != "" {
		t.Errorf("the handler saw (-want +got):\n%s", diff)
	}
}

// children is a reader of children by name.
type childReader map[types.NamespacedName]*corev1.ConfigMap

func (c childReader) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	cm, ok := c[key]
	if !ok {
		return apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, key.Name)
	}
	cm.DeepCopyInto(obj.(*corev1.ConfigMap))
	return nil
}

func (childReader) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("not listed")
}

// A known child that a later run's cache lacks is told as deleted, from
// its last state; one that is there, or was deleted before, is not.
func TestRecallGone(t *testing.T) {
	owner := newOwner("owner", "uid-1")
	f := newFixture(t, owners{{Namespace: "ns", Name: "owner"}: owner}, childHandler("h"))
	kept := newChild("1", "a", owner)
	kept.Name = "kept"
	f.w.Observe(cause.ChildExisting, nil, newChild("1", "a", owner))
	f.w.Observe(cause.ChildChanged, newChild("1", "a", owner), newChild("2", "b", owner))
	f.w.Observe(cause.ChildCreated, nil, kept)
	gone := newChild("1", "x", owner)
	gone.Name = "deleted-before"
	f.w.Observe(cause.ChildCreated, nil, gone)
	f.w.Observe(cause.ChildDeleted, gone, nil)
	if n := f.w.k.Known.Size(); n != 2 {
		t.Fatalf("%d children known, want 2", n)
	}

	// The next run: a new Watch on the same memory.
	next := New(f.w.k)
	var sent []string
	next.RecallGone(context.Background(), childReader{{Namespace: "ns", Name: "kept"}: kept}, func(obj client.Object) {
		sent = append(sent, obj.GetName())
	})
	if diff := cmp.Diff([]string{"child"}, sent); diff != "" {
		t.Errorf("recalled (-want +got):\n%s", diff)
	}
	f.w = next
	f.reconcile(t)
	want := []call{{ID: "h", Reason: cause.ChildDeleted, Owner: "owner", Field: "b", Old: "b"}}
	if diff := cmp.Diff(want, f.calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	if n := next.k.Known.Size(); n != 1 {
		t.Errorf("%d children known after the recall, want 1 (kept)", n)
	}
}
