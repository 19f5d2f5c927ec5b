package conditions

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kopf-go/kopf/internal/execution"
)

// short is a derived condition as the tests write it.
type short struct{ Type, Status, Reason, Message string }

func shorten(cs []metav1.Condition) []short {
	var out []short
	for _, c := range cs {
		out = append(out, short{c.Type, string(c.Status), c.Reason, c.Message})
	}
	return out
}

func TestDerive(t *testing.T) {
	tests := []struct {
		name     string
		handlers []Handler
		want     []short
	}{
		{"no handler selected", nil, []short{
			{Ready, "True", ReasonSucceeded, "Creation is processed: 0 succeeded; 0 failed."},
			{Reconciling, "False", ReasonSucceeded, "Creation is processed: 0 succeeded; 0 failed."},
			{Stalled, "False", ReasonSucceeded, "Creation is processed: 0 succeeded; 0 failed."},
		}},
		{"all succeeded", []Handler{{ID: "a", Finished: true, Retries: 1}, {ID: "b", Finished: true, Retries: 3}}, []short{
			{Ready, "True", ReasonSucceeded, "Creation is processed: 2 succeeded; 0 failed."},
			{Reconciling, "False", ReasonSucceeded, "Creation is processed: 2 succeeded; 0 failed."},
			{Stalled, "False", ReasonSucceeded, "Creation is processed: 2 succeeded; 0 failed."},
		}},
		{"one done, others not yet run", []Handler{{ID: "a", Finished: true, Retries: 1}, {ID: "b"}, {ID: "c"}}, []short{
			{Ready, "False", ReasonInProgress, "Creation is in progress: b, c pending."},
			{Reconciling, "True", ReasonInProgress, "Creation is in progress: b, c pending."},
			{Stalled, "False", ReasonInProgress, "Creation is in progress: b, c pending."},
		}},
		{"retrying names the first retrying handler", []Handler{{ID: "a"}, {ID: "b", Retries: 2, Message: "not yet"}, {ID: "c", Retries: 1, Message: "later"}}, []short{
			{Ready, "False", ReasonRetrying, "Handler 'b' failed temporarily and will retry: not yet"},
			{Reconciling, "True", ReasonRetrying, "Handler 'b' failed temporarily and will retry: not yet"},
			{Stalled, "False", ReasonRetrying, "Handler 'b' failed temporarily and will retry: not yet"},
		}},
		{"failed for good", []Handler{{ID: "a", Finished: true, Failed: true, Retries: 1, Message: "broken"}, {ID: "b", Finished: true}}, []short{
			{Ready, "False", ReasonFailed, "Handler 'a' failed permanently: broken"},
			{Reconciling, "False", ReasonFailed, "Handler 'a' failed permanently: broken"},
			{Stalled, "True", ReasonFailed, "Handler 'a' failed permanently: broken"},
		}},
		{"failed for good while another retries", []Handler{{ID: "a", Finished: true, Failed: true, Message: "broken"}, {ID: "b", Retries: 1, Message: "flaky"}}, []short{
			{Ready, "False", ReasonFailed, "Handler 'a' failed permanently: broken"},
			{Reconciling, "True", ReasonRetrying, "Handler 'b' failed temporarily and will retry: flaky"},
			{Stalled, "True", ReasonFailed, "Handler 'a' failed permanently: broken"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := shorten(Derive(Progress{Title: "Creation", Handlers: tt.handlers}))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Derive (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDeriveLimitsLongMessages(t *testing.T) {
	long := strings.Repeat("é", messageLimit) // two bytes each
	got := Derive(Progress{Title: "Creation", Handlers: []Handler{{ID: "a", Finished: true, Failed: true, Message: long}}})
	for _, c := range got {
		if len(c.Message) > messageLimit || !strings.HasSuffix(c.Message, "...") || !strings.HasPrefix(c.Message, "Handler 'a'") {
			t.Errorf("%s: a message of %d bytes, want at most %d ending in ...", c.Type, len(c.Message), messageLimit)
		}
	}
}

func TestFromStateTakesActiveHandlers(t *testing.T) {
	msg := "later"
	st := &execution.State{Order: []string{"old", "a", "b"}, Handlers: map[string]*execution.HandlerState{
		"old": {Purpose: "create", Success: true},
		"a":   {Active: true, Purpose: "update", Retries: 2, Message: &msg},
		"b":   {Active: true, Purpose: "update", Failure: true, Retries: 1},
	}}
	want := Progress{Title: "Update", Handlers: []Handler{{ID: "a", Retries: 2, Message: "later"}, {ID: "b", Finished: true, Failed: true, Retries: 1}}}
	if diff := cmp.Diff(want, FromState(st, "Update")); diff != "" {
		t.Errorf("FromState (-want +got):\n%s", diff)
	}
}

// at is the fake clock's start, and what the conditions' times say of it.
var at = time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC)

const atText = "2026-01-02T03:04:05Z"

func TestUpdateTransitionTimesMoveOnlyWithStatus(t *testing.T) {
	clock := clocktesting.NewFakePassiveClock(at)
	other := map[string]any{"type": "Available", "status": "True", "reason": "Mine", "message": "", "lastTransitionTime": "2020-01-01T00:00:00Z", "extra": "kept"}
	pending := Progress{Title: "Creation", Handlers: []Handler{{ID: "a", Retries: 1, Message: "not yet"}}}

	first := Update([]any{other}, nil, Input{Progress: pending, Generation: 1, Now: clock.Now()})
	list := first[FieldConditions].([]any)
	if diff := cmp.Diff(other, list[0]); diff != "" {
		t.Errorf("another writer's condition changed (-want +got):\n%s", diff)
	}
	if _, ok := first[FieldObservedGeneration]; ok {
		t.Errorf("observedGeneration written while handlers are pending: %v", first)
	}
	wantReady := map[string]any{"type": Ready, "status": "False", "reason": ReasonRetrying, "observedGeneration": int64(1), "lastTransitionTime": atText,
		"message": "Handler 'a' failed temporarily and will retry: not yet"}
	if diff := cmp.Diff(wantReady, list[1]); diff != "" {
		t.Errorf("Ready (-want +got):\n%s", diff)
	}

	// The same standing later: nothing to write.
	clock.SetTime(at.Add(time.Minute))
	if got := Update(list, nil, Input{Progress: pending, Generation: 1, Now: clock.Now()}); len(got) != 0 {
		t.Errorf("Update of an unchanged standing = %v, want nothing", got)
	}

	// Another retry with the same error: nothing to write.
	same := Progress{Title: "Creation", Handlers: []Handler{{ID: "a", Retries: 2, Message: "not yet"}}}
	if got := Update(list, nil, Input{Progress: same, Generation: 1, Now: clock.Now()}); len(got) != 0 {
		t.Errorf("Update of a retry with the same error = %v, want nothing", got)
	}
	// Another error: the message changes, the time does not.
	again := Progress{Title: "Creation", Handlers: []Handler{{ID: "a", Retries: 2, Message: "still not"}}}
	list2 := Update(list, nil, Input{Progress: again, Generation: 1, Now: clock.Now()})[FieldConditions].([]any)
	if got := list2[1].(map[string]any)["lastTransitionTime"]; got != atText {
		t.Errorf("Ready's lastTransitionTime = %v after a retry, want it kept at %s", got, atText)
	}

	// Success: Ready and Reconciling move, Stalled (False all along) does not.
	clock.SetTime(at.Add(2 * time.Minute))
	done := Progress{Title: "Creation", Handlers: []Handler{{ID: "a", Finished: true, Retries: 3}}}
	out := Update(list2, nil, Input{Progress: done, Generation: 1, Now: clock.Now()})
	final := out[FieldConditions].([]any)
	times := map[string]any{}
	for _, item := range final {
		c := item.(map[string]any)
		times[c["type"].(string)] = c["lastTransitionTime"]
	}
	want := map[string]any{"Available": "2020-01-01T00:00:00Z", Ready: "2026-01-02T03:06:05Z", Reconciling: "2026-01-02T03:06:05Z", Stalled: atText}
	if diff := cmp.Diff(want, times); diff != "" {
		t.Errorf("lastTransitionTimes (-want +got):\n%s", diff)
	}
	if out[FieldObservedGeneration] != int64(1) {
		t.Errorf("observedGeneration = %v once handled, want 1", out[FieldObservedGeneration])
	}
	if got := Update(final, int64(1), Input{Progress: done, Generation: 1, Now: clock.Now()}); len(got) != 0 {
		t.Errorf("Update once written = %v, want nothing", got)
	}
}

func TestUpdateWithoutGenerations(t *testing.T) {
	done := Progress{Title: "Creation", Handlers: []Handler{{ID: "a", Finished: true}}}
	out := Update(nil, nil, Input{Progress: done, Now: at})
	if _, ok := out[FieldObservedGeneration]; ok {
		t.Errorf("observedGeneration written without generations: %v", out)
	}
	for _, item := range out[FieldConditions].([]any) {
		if g, ok := item.(map[string]any)["observedGeneration"]; ok {
			t.Errorf("a condition's observedGeneration %v written without generations", g)
		}
	}
}

func TestUpdateResumeKeepsAFailureOfTheSameGeneration(t *testing.T) {
	failed := Progress{Title: "Update", Handlers: []Handler{{ID: "u", Finished: true, Failed: true, Message: "broken"}}}
	list := Update(nil, nil, Input{Progress: failed, Generation: 3, Now: at})[FieldConditions]
	resumed := Progress{Title: "Resuming", Handlers: []Handler{{ID: "r", Finished: true}}}
	if got := Update(list, int64(3), Input{Progress: resumed, Generation: 3, Resume: true, Now: at}); len(got) != 0 {
		t.Errorf("a resume of the failed generation wrote %v, want nothing", got)
	}
	got := Update(list, int64(3), Input{Progress: resumed, Generation: 4, Resume: true, Now: at})
	if ready := got[FieldConditions].([]any)[0].(map[string]any); ready["status"] != "True" {
		t.Errorf("a resume of a newer generation left Ready %v, want True", ready)
	}
}

func TestRebaseTakesOthersFromTheFreshList(t *testing.T) {
	ours := []any{
		map[string]any{"type": "Available", "status": "False"},
		map[string]any{"type": Ready, "status": "True"},
		map[string]any{"type": Stalled, "status": "False"},
	}
	fresh := []any{
		map[string]any{"type": Ready, "status": "False"},
		map[string]any{"type": "Available", "status": "True"},
		map[string]any{"type": "Degraded", "status": "False"},
	}
	want := []any{
		map[string]any{"type": Ready, "status": "True"},
		map[string]any{"type": "Available", "status": "True"},
		map[string]any{"type": "Degraded", "status": "False"},
		map[string]any{"type": Stalled, "status": "False"},
	}
	if diff := cmp.Diff(want, Rebase(ours, fresh)); diff != "" {
		t.Errorf("Rebase (-want +got):\n%s", diff)
	}
}
