package causes

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kopf-go/kopf/pkg/diff"
	"github.com/kopf-go/kopf/pkg/fields"
)

var someDiff = diff.Diff{{Op: diff.Change, Field: fields.Path{"spec", "field"}, Old: "value", New: "changed"}}

func TestDetect(t *testing.T) {
	type result struct {
		Reason  Reason
		Initial bool
	}
	tests := []struct {
		name string
		in   Input
		want result
	}{
		// 1. GONE wins over everything.
		{"gone", Input{Gone: true}, result{Gone, false}},
		{"gone while deleting with a finalizer", Input{Gone: true, Deleting: true, Finalized: true, HasDiffBase: true, Diff: someDiff, Initial: true}, result{Gone, true}},
		// 2. FREE: deleting without our finalizer.
		{"free", Input{Deleting: true}, result{Free, false}},
		{"free, even with a diff and no diffbase", Input{Deleting: true, Diff: someDiff, Initial: true}, result{Free, true}},
		// 3. DELETE: deleting with our finalizer.
		{"delete", Input{Deleting: true, Finalized: true, HasDiffBase: true}, result{Delete, false}},
		{"delete without a diffbase", Input{Deleting: true, Finalized: true}, result{Delete, false}},
		{"delete, initial (found deleted at startup)", Input{Deleting: true, Finalized: true, HasDiffBase: true, Initial: true}, result{Delete, true}},
		{"delete with a diff", Input{Deleting: true, Finalized: true, HasDiffBase: true, Diff: someDiff}, result{Delete, false}},
		// 4. CREATE: no diffbase; never initial.
		{"create", Input{}, result{Create, false}},
		{"create, initial is forced off", Input{Initial: true}, result{Create, false}},
		{"create with our finalizer already on", Input{Finalized: true, Initial: true}, result{Create, false}},
		{"create ignores the diff", Input{Diff: someDiff}, result{Create, false}},
		// 5. RESUME: no diff, initial.
		{"resume", Input{HasDiffBase: true, Initial: true}, result{Resume, true}},
		{"resume with an empty, non-nil diff", Input{HasDiffBase: true, Initial: true, Diff: diff.Diff{}}, result{Resume, true}},
		{"resume with our finalizer", Input{HasDiffBase: true, Finalized: true, Initial: true}, result{Resume, true}},
		// 6. NOOP: no diff, not initial.
		{"noop", Input{HasDiffBase: true}, result{NoOp, false}},
		{"noop with our finalizer", Input{HasDiffBase: true, Finalized: true}, result{NoOp, false}},
		// 7. UPDATE: a diff.
		{"update", Input{HasDiffBase: true, Diff: someDiff}, result{Update, false}},
		{"update, initial (changed during the downtime)", Input{HasDiffBase: true, Diff: someDiff, Initial: true}, result{Update, true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reason, initial := Detect(tt.in)
			if diff := cmp.Diff(tt.want, result{reason, initial}); diff != "" {
				t.Errorf("Detect(%+v) -want +got:\n%s", tt.in, diff)
			}
		})
	}
}

func TestReasonTitle(t *testing.T) {
	tests := map[Reason]string{
		Create: "Creation",
		Update: "Updating",
		Delete: "Deletion",
		Resume: "Resuming",
		NoOp:   "noop",
		Free:   "free",
		Gone:   "gone",
	}
	for reason, want := range tests {
		if got := reason.Title(); got != want {
			t.Errorf("%q.Title() = %q, want %q", reason, got, want)
		}
	}
}

func TestReasonWireNames(t *testing.T) {
	// The reasons are persisted as the purpose of progress records.
	got := []Reason{Create, Update, Delete, Resume, NoOp, Free, Gone}
	want := []Reason{"create", "update", "delete", "resume", "noop", "free", "gone"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("reasons -want +got:\n%s", diff)
	}
}

func TestReasonHandlesChanges(t *testing.T) {
	tests := map[Reason]bool{
		Create: true, Update: true, Delete: true, Resume: true,
		NoOp: false, Free: false, Gone: false, "": false,
	}
	for reason, want := range tests {
		if got := reason.HandlesChanges(); got != want {
			t.Errorf("%q.HandlesChanges() = %v, want %v", reason, got, want)
		}
	}
}

func TestCauseSpec(t *testing.T) {
	tests := []struct {
		name string
		body map[string]any
		want map[string]any
	}{
		{"a spec", map[string]any{"spec": map[string]any{"field": "value"}}, map[string]any{"field": "value"}},
		{"no spec", map[string]any{"data": 1}, nil},
		{"a spec that is not a map", map[string]any{"spec": "text"}, nil},
		{"no body", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &Cause{Body: tt.body}
			if diff := cmp.Diff(tt.want, c.Spec()); diff != "" {
				t.Errorf("Spec() -want +got:\n%s", diff)
			}
		})
	}
}
