package registry

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kopf-go/kopf/internal/causes"
	"github.com/kopf-go/kopf/internal/execution"
	"github.com/kopf-go/kopf/pkg/diff"
	"github.com/kopf-go/kopf/pkg/fields"
)

// handler builds a change handler the way the handlers facade does.
func handler(id string, reason causes.Reason, opts ...func(*ChangeHandler)) *ChangeHandler {
	h := &ChangeHandler{Handler: execution.Handler{ID: id}, Reason: reason}
	switch reason {
	case causes.Update:
		h.FieldNeedsChange = true
	case causes.Delete:
		h.RequiresFinalizer = true
	}
	for _, o := range opts {
		o(h)
	}
	return h
}

func resume(h *ChangeHandler)   { h.Initial = true }
func deleted(h *ChangeHandler)  { h.Deleted = true }
func optional(h *ChangeHandler) { h.RequiresFinalizer = false }
func onField(path string) func(*ChangeHandler) {
	return func(h *ChangeHandler) {
		h.Field = fields.Parse(path)
		h.FieldNeedsChange = true
		h.ID += "/" + path
	}
}
func labels(f map[string]Filter) func(*ChangeHandler) {
	return func(h *ChangeHandler) { h.Labels = f }
}

func ids(hs []*ChangeHandler) []string {
	out := []string{}
	for _, h := range hs {
		out = append(out, h.ID)
	}
	return out
}

// subject detects the cause as the cycle does and wraps it for matching.
func subject(in causes.Input, old, new m, objLabels map[string]string) *Subject {
	reason, initial := causes.Detect(in)
	return &Subject{
		Obj:      &unstructured.Unstructured{Object: new},
		Labels:   objLabels,
		Cause:    &causes.Cause{Reason: reason, Old: old, New: new, Diff: diff.Compute(old, new)},
		Initial:  initial,
		Deleting: in.Deleting,
	}
}

// TestSelectMixesInResume is the table of kopf-semantics.md §2.4.
func TestSelectMixesInResume(t *testing.T) {
	kind := &Kind{Changing: []*ChangeHandler{
		handler("resume_fn", "", resume),
		handler("create_fn", causes.Create),
		handler("update_fn", causes.Update),
		handler("delete_fn", causes.Delete),
		handler("resume_deleted_fn", "", resume, deleted),
	}}
	same := m{"spec": m{"field": "value"}}
	changed := m{"spec": m{"field": "changed"}}
	tests := []struct {
		name       string
		in         causes.Input
		old, new   m
		wantReason causes.Reason
		want       []string
	}{
		{"listed, diffbase equal", causes.Input{HasDiffBase: true, Initial: true}, same, same,
			causes.Resume, []string{"resume_fn", "resume_deleted_fn"}},
		{"listed, changed during downtime", causes.Input{HasDiffBase: true, Initial: true, Diff: diff.Compute(same, changed)}, same, changed,
			causes.Update, []string{"resume_fn", "update_fn", "resume_deleted_fn"}},
		{"listed, deletionTimestamp set", causes.Input{HasDiffBase: true, Initial: true, Deleting: true, Finalized: true}, same, same,
			causes.Delete, []string{"delete_fn", "resume_deleted_fn"}},
		{"listed, no diffbase", causes.Input{Initial: true}, nil, same,
			causes.Create, []string{"create_fn"}},
		{"added while running", causes.Input{}, nil, same,
			causes.Create, []string{"create_fn"}},
		{"changed while running", causes.Input{HasDiffBase: true, Diff: diff.Compute(same, changed)}, same, changed,
			causes.Update, []string{"update_fn"}},
		{"deleted while running", causes.Input{HasDiffBase: true, Deleting: true, Finalized: true}, same, same,
			causes.Delete, []string{"delete_fn"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := subject(tt.in, tt.old, tt.new, nil)
			if s.Cause.Reason != tt.wantReason {
				t.Fatalf("reason = %q, want %q", s.Cause.Reason, tt.wantReason)
			}
			if diff := cmp.Diff(tt.want, ids(kind.Select(s))); diff != "" {
				t.Errorf("Select() -want +got:\n%s", diff)
			}
		})
	}
}

func TestSelect(t *testing.T) {
	old := m{"spec": m{"field": "value", "other": 1.0}}
	fieldChanged := m{"spec": m{"field": "changed", "other": 1.0}}
	otherChanged := m{"spec": m{"field": "value", "other": 2.0}}
	update := func(old, new m) causes.Input {
		return causes.Input{HasDiffBase: true, Diff: diff.Compute(old, new)}
	}
	tests := []struct {
		name     string
		handlers []*ChangeHandler
		in       causes.Input
		old, new m
		labels   map[string]string
		want     []string
	}{
		{"reason must match", []*ChangeHandler{handler("c", causes.Create), handler("u", causes.Update), handler("d", causes.Delete)},
			update(old, fieldChanged), old, fieldChanged, nil, []string{"u"}},
		{"field handler on its field's change", []*ChangeHandler{handler("f", "", onField("spec.field"))},
			update(old, fieldChanged), old, fieldChanged, nil, []string{"f/spec.field"}},
		{"field handler not on another field's change", []*ChangeHandler{handler("f", "", onField("spec.field"))},
			update(old, otherChanged), old, otherChanged, nil, []string{}},
		{"field handler on creation (old is absent)", []*ChangeHandler{handler("f", "", onField("spec.field"))},
			causes.Input{}, nil, old, nil, []string{"f/spec.field"}},
		{"field handler not on creation without the field", []*ChangeHandler{handler("f", "", onField("spec.missing"))},
			causes.Input{}, nil, old, nil, []string{}},
		{"update with a field needs that field changed", []*ChangeHandler{handler("u", causes.Update, func(h *ChangeHandler) { h.Field = fields.Path{"spec", "field"} })},
			update(old, otherChanged), old, otherChanged, nil, []string{}},
		{"old/new filters match", []*ChangeHandler{handler("u", causes.Update, onField("spec.field"), func(h *ChangeHandler) { h.Old, h.New = Equals("value"), Equals("changed") })},
			update(old, fieldChanged), old, fieldChanged, nil, []string{"u/spec.field"}},
		{"old/new filters do not match the other way", []*ChangeHandler{handler("u", causes.Update, onField("spec.field"), func(h *ChangeHandler) { h.Old, h.New = Equals("value"), Equals("changed") })},
			update(fieldChanged, old), fieldChanged, old, nil, []string{}},
		{"labels filter", []*ChangeHandler{
			handler("match", causes.Update, labels(map[string]Filter{"somelabel": Equals("somevalue")})),
			handler("mismatch", causes.Update, labels(map[string]Filter{"somelabel": Equals("other")})),
			handler("present", causes.Update, labels(map[string]Filter{"somelabel": Present})),
			handler("absent", causes.Update, labels(map[string]Filter{"somelabel": Absent})),
		}, update(old, fieldChanged), old, fieldChanged, map[string]string{"somelabel": "somevalue"}, []string{"match", "present"}},
		{"update with a value filter needs its field changed", []*ChangeHandler{
			handler("yes", causes.Update, func(h *ChangeHandler) { h.Field, h.Value = fields.Path{"spec", "other"}, Equals(1) }),
			handler("no", causes.Update, func(h *ChangeHandler) { h.Field, h.Value = fields.Path{"spec", "other"}, Equals(5) }),
		}, update(old, fieldChanged), old, fieldChanged, nil, []string{}},
		{"value filter where no change is needed", []*ChangeHandler{
			handler("yes", causes.Create, func(h *ChangeHandler) { h.Field, h.Value = fields.Path{"spec", "other"}, Equals(1) }),
			handler("no", causes.Create, func(h *ChangeHandler) { h.Field, h.Value = fields.Path{"spec", "other"}, Equals(5) }),
		}, causes.Input{}, nil, old, nil, []string{"yes"}},
		{"when false", []*ChangeHandler{
			handler("no", causes.Update, func(h *ChangeHandler) { h.When = func(Object, *causes.Cause) bool { return false } }),
			handler("yes", causes.Update, func(h *ChangeHandler) { h.When = func(Object, *causes.Cause) bool { return true } }),
		}, update(old, fieldChanged), old, fieldChanged, nil, []string{"yes"}},
		{"deduplicated by id, the first wins", []*ChangeHandler{
			handler("fn", "", resume), handler("fn", causes.Update), handler("other", causes.Update),
		}, causes.Input{HasDiffBase: true, Initial: true, Diff: diff.Compute(old, fieldChanged)}, old, fieldChanged, nil, []string{"fn", "other"}},
		{"a non-matching handler does not shadow its id", []*ChangeHandler{
			handler("fn", causes.Create), handler("fn", causes.Update),
		}, update(old, fieldChanged), old, fieldChanged, nil, []string{"fn"}},
		{"registration order", []*ChangeHandler{
			handler("b", causes.Update), handler("a", causes.Update), handler("c", causes.Update),
		}, update(old, fieldChanged), old, fieldChanged, nil, []string{"b", "a", "c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kind := &Kind{Changing: tt.handlers}
			got := kind.Select(subject(tt.in, tt.old, tt.new, tt.labels))
			if diff := cmp.Diff(tt.want, ids(got)); diff != "" {
				t.Errorf("Select() -want +got:\n%s", diff)
			}
		})
	}
}

func TestSelectDedupReturnsTheFirstHandler(t *testing.T) {
	first := handler("fn", "", resume)
	second := handler("fn", causes.Update)
	kind := &Kind{Changing: []*ChangeHandler{first, second}}
	old, new := m{"spec": 1.0}, m{"spec": 2.0}
	got := kind.Select(subject(causes.Input{HasDiffBase: true, Initial: true, Diff: diff.Compute(old, new)}, old, new, nil))
	if len(got) != 1 || got[0] != first {
		t.Errorf("Select() = %v, want only the first registered handler", ids(got))
	}
}

// As in Kopf, filters see the whole cause (the essences), not the field's
// narrowed values: narrowing happens only for the handler's own call.
func TestWhenSeesTheWholeCause(t *testing.T) {
	var seen *causes.Cause
	var seenObj Object
	h := handler("fn", "", onField("spec.field"), func(h *ChangeHandler) {
		h.When = func(obj Object, c *causes.Cause) bool {
			seen, seenObj = c, obj
			return true
		}
	})
	old := m{"spec": m{"field": "value", "other": 1.0}}
	new := m{"spec": m{"field": "changed", "other": 2.0}}
	s := subject(causes.Input{HasDiffBase: true, Diff: diff.Compute(old, new)}, old, new, nil)
	original := *s.Cause

	if got := ids((&Kind{Changing: []*ChangeHandler{h}}).Select(s)); len(got) != 1 {
		t.Fatalf("Select() = %v, want the handler", got)
	}
	if seen == nil {
		t.Fatal("When was not called")
	}
	want := original
	want.HandlerID = "fn/spec.field"
	if diff := cmp.Diff(want, *seen, ignoreHooks); diff != "" {
		t.Errorf("When's cause -want +got:\n%s", diff)
	}
	if seenObj != s.Obj {
		t.Errorf("When got another object")
	}
	if diff := cmp.Diff(original, *s.Cause, ignoreHooks); diff != "" {
		t.Errorf("the subject's cause changed -want +got:\n%s", diff)
	}
}

func TestNarrow(t *testing.T) {
	old := m{"spec": m{"field": m{"a": 1.0}}}
	new := m{"spec": m{"field": m{"a": 2.0}}}
	c := causes.Cause{Reason: causes.Update, Old: old, New: new, Diff: diff.Compute(old, new)}
	tests := []struct {
		name string
		h    *ChangeHandler
		want causes.Cause
	}{
		{"a field handler sees its field", handler("fn", "", onField("spec.field")), causes.Cause{
			Reason: causes.Update, HandlerID: "fn/spec.field", Old: m{"a": 1.0}, New: m{"a": 2.0},
			Diff: diff.Diff{{Op: diff.Change, Field: fields.Path{"a"}, Old: 1.0, New: 2.0}},
		}},
		{"a handler without a field sees everything", handler("fn", causes.Update), causes.Cause{
			Reason: causes.Update, HandlerID: "fn", Old: old, New: new, Diff: c.Diff,
		}},
		{"an absent field is nil", handler("fn", "", onField("spec.missing")), causes.Cause{
			Reason: causes.Update, HandlerID: "fn/spec.missing",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.h.Narrow(c), ignoreHooks); diff != "" {
				t.Errorf("Narrow() -want +got:\n%s", diff)
			}
		})
	}
}

func TestPrematchAndRequiresFinalizer(t *testing.T) {
	obj := m{"spec": m{"field": "value"}}
	labelled := map[string]string{"run": "yes"}
	tests := []struct {
		name          string
		handlers      []*ChangeHandler
		labels        map[string]string
		wantPrematch  bool
		wantFinalizer bool
	}{
		{"no handlers", nil, nil, false, false},
		{"create handler", []*ChangeHandler{handler("c", causes.Create)}, nil, true, false},
		{"mandatory delete handler", []*ChangeHandler{handler("d", causes.Delete)}, nil, true, true},
		{"optional delete handler", []*ChangeHandler{handler("d", causes.Delete, optional)}, nil, true, false},
		{"delete handler whose labels do not match", []*ChangeHandler{handler("d", causes.Delete, labels(map[string]Filter{"run": Equals("yes")}))}, nil, false, false},
		{"delete handler whose labels match", []*ChangeHandler{handler("d", causes.Delete, labels(map[string]Filter{"run": Equals("yes")}))}, labelled, true, true},
		{"one of several prematches", []*ChangeHandler{
			handler("c", causes.Create, labels(map[string]Filter{"run": Absent})),
			handler("d", causes.Delete, labels(map[string]Filter{"run": Equals("no")})),
		}, nil, true, false},
		{"a field handler prematches by presence, not by change", []*ChangeHandler{handler("f", "", onField("spec.field"))}, nil, true, false},
		{"a field handler of an absent field does not", []*ChangeHandler{handler("f", "", onField("spec.missing"))}, nil, false, false},
		{"when is part of the prematch", []*ChangeHandler{handler("d", causes.Delete, func(h *ChangeHandler) {
			h.When = func(Object, *causes.Cause) bool { return false }
		})}, nil, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kind := &Kind{Changing: tt.handlers}
			// A no-op cycle: nothing changed, so only presence-based filters can match.
			s := subject(causes.Input{HasDiffBase: true}, obj, obj, tt.labels)
			if got := kind.Prematch(s); got != tt.wantPrematch {
				t.Errorf("Prematch() = %v, want %v", got, tt.wantPrematch)
			}
			if got := kind.RequiresFinalizer(s); got != tt.wantFinalizer {
				t.Errorf("RequiresFinalizer() = %v, want %v", got, tt.wantFinalizer)
			}
		})
	}
}

// ignoreHooks leaves out the cause's unexported machinery (the sub-handler
// collection) when comparing causes.
var ignoreHooks = cmpopts.IgnoreUnexported(causes.Cause{})
