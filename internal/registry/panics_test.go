package registry

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kopf-go/kopf/internal/causes"
	"github.com/kopf-go/kopf/internal/contain"
	"github.com/kopf-go/kopf/internal/daemons"
	"github.com/kopf-go/kopf/internal/execution"
	"github.com/kopf-go/kopf/pkg/fields"
)

// panicking is a filter function that panics.
func panicking(any) bool { panic("the filter is broken") }

// panickingFilters are the filters of every form that runs the operator's
// code, each panicking: every one must be a mismatch that is told.
var panickingFilters = []struct {
	name    string
	filters Filters
}{
	{"when", Filters{When: func(Object, *causes.Cause) bool { panic("the filter is broken") }}},
	{"a label's function", Filters{Labels: map[string]Filter{"app": Check(panicking)}}},
	{"an annotation's function", Filters{Annotations: map[string]Filter{"note": Check(panicking)}}},
	{"a field's value function", Filters{Field: fields.Parse("spec.field"), Value: Check(panicking)}},
}

// heard records the panics that FilterPanicked hears of.
type heard struct{ ids, values []string }

func (h *heard) subject(reason causes.Reason) *Subject {
	body := map[string]any{"spec": map[string]any{"field": "x"}}
	s := &Subject{
		Obj:         &unstructured.Unstructured{Object: body},
		Labels:      map[string]string{"app": "a"},
		Annotations: map[string]string{"note": "n"},
		Cause:       &causes.Cause{Reason: reason, Body: body, New: body, Old: map[string]any{}},
	}
	s.FilterPanicked = func(handler *execution.Handler, p *contain.Panic) {
		h.ids = append(h.ids, handler.ID)
		h.values = append(h.values, p.Error())
	}
	return s
}

// TestFilterPanicsAreMismatches: a change handler whose filter panics is
// not selected, does not prematch, does not need the finalizer, and the
// panic is told for the handler at each evaluation; the other handlers of
// the kind are selected as if nothing had happened.
func TestFilterPanicsAreMismatches(t *testing.T) {
	for _, tt := range panickingFilters {
		t.Run(tt.name, func(t *testing.T) {
			broken := &ChangeHandler{Handler: execution.Handler{ID: "broken"}, Filters: tt.filters, RequiresFinalizer: true}
			fine := &ChangeHandler{Handler: execution.Handler{ID: "fine"}}
			kind := &Kind{Changing: []*ChangeHandler{broken, fine}}
			h := &heard{}
			s := h.subject(causes.Create)
			if diff := cmp.Diff([]string{"fine"}, ids(kind.Select(s))); diff != "" {
				t.Errorf("Select() -want +got:\n%s", diff)
			}
			if (&Kind{Changing: []*ChangeHandler{broken}}).Prematch(s) {
				t.Error("the broken handler prematches")
			}
			if kind.RequiresFinalizer(s) {
				t.Error("the broken handler needs the finalizer")
			}
			want := &heard{ids: []string{"broken", "broken", "broken"}, values: []string{
				"panic: the filter is broken", "panic: the filter is broken", "panic: the filter is broken"}}
			if diff := cmp.Diff(want, h, cmp.AllowUnexported(heard{})); diff != "" {
				t.Errorf("the panics told -want +got:\n%s", diff)
			}
		})
	}
}

// TestBodyFilterPanicsAreMismatches: the same for the handlers that test
// the object as it is (on-event, index, daemons and timers).
func TestBodyFilterPanicsAreMismatches(t *testing.T) {
	for _, tt := range panickingFilters {
		t.Run(tt.name, func(t *testing.T) {
			kind := &Kind{
				Watching: []*EventHandler{{Handler: execution.Handler{ID: "event-broken"}, Filters: tt.filters}, {Handler: execution.Handler{ID: "event-fine"}}},
				Spawning: []*SpawnHandler{{Handler: execution.Handler{ID: "daemon-broken"}, Filters: tt.filters, Spec: daemons.Spec{Kind: daemons.KindDaemon}},
					{Handler: execution.Handler{ID: "daemon-fine"}, Spec: daemons.Spec{Kind: daemons.KindDaemon}}},
			}
			index := &IndexHandler{Handler: execution.Handler{ID: "index-broken"}, Filters: tt.filters}
			h := &heard{}
			s := h.subject("")
			var got []string
			for _, e := range kind.MatchEvents(s) {
				got = append(got, e.ID)
			}
			for _, d := range kind.MatchSpawning(s) {
				got = append(got, d.ID)
			}
			if index.Matches(s) {
				got = append(got, index.ID)
			}
			if diff := cmp.Diff([]string{"event-fine", "daemon-fine"}, got); diff != "" {
				t.Errorf("the matching handlers -want +got:\n%s", diff)
			}
			if diff := cmp.Diff([]string{"event-broken", "daemon-broken", "index-broken"}, h.ids); diff != "" {
				t.Errorf("the panics told -want +got:\n%s", diff)
			}
		})
	}
}

// TestFilterPanicWithoutHook: a subject without a hook still contains
// the panic (a mismatch).
func TestFilterPanicWithoutHook(t *testing.T) {
	broken := &ChangeHandler{Handler: execution.Handler{ID: "broken"}, Filters: panickingFilters[0].filters}
	s := (&heard{}).subject(causes.Create)
	s.FilterPanicked = nil
	if got := (&Kind{Changing: []*ChangeHandler{broken}}).Select(s); len(got) != 0 {
		t.Errorf("Select() = %v, want nothing", ids(got))
	}
}
