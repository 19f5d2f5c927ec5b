package execution

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/kopf-go/kopf/pkg/progress"
)

func at(d time.Duration) *time.Time { t := t0.Add(d); return &t }

func msg(s string) *string { return &s }

var ignoreOrigin = cmpopts.IgnoreUnexported(HandlerState{})

func TestHandlerStateTiming(t *testing.T) {
	now := t0.Add(10 * time.Second)
	tests := []struct {
		name                      string
		st                        HandlerState
		finished, sleeping, awake bool
	}{
		{"fresh", HandlerState{Started: t0}, false, false, true},
		{"delayed into the future", HandlerState{Started: t0, Delayed: at(11 * time.Second)}, false, true, false},
		{"delayed until now", HandlerState{Started: t0, Delayed: at(10 * time.Second)}, false, false, true},
		{"delayed into the past", HandlerState{Started: t0, Delayed: at(time.Second)}, false, false, true},
		{"succeeded", HandlerState{Started: t0, Success: true, Delayed: at(time.Hour)}, true, false, false},
		{"failed", HandlerState{Started: t0, Failure: true}, true, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.st.Finished(); got != tt.finished {
				t.Errorf("Finished() = %v, want %v", got, tt.finished)
			}
			if got := tt.st.Sleeping(now); got != tt.sleeping {
				t.Errorf("Sleeping() = %v, want %v", got, tt.sleeping)
			}
			if got := tt.st.Awake(now); got != tt.awake {
				t.Errorf("Awake() = %v, want %v", got, tt.awake)
			}
			if got := tt.st.Runtime(now); got != 10*time.Second {
				t.Errorf("Runtime() = %v, want 10s", got)
			}
		})
	}
}

func TestFromRecordAndBack(t *testing.T) {
	now := t0.Add(time.Minute)
	tests := []struct {
		name        string
		r           progress.Record
		want        HandlerState
		wantChanged bool
	}{
		{"full record",
			progress.Record{Started: at(0), Stopped: at(time.Second), Delayed: at(2 * time.Second), Purpose: "update", Retries: 2, Failure: true, Message: msg("x"), Subrefs: []string{"a/b"}},
			HandlerState{Started: t0, Stopped: at(time.Second), Delayed: at(2 * time.Second), Purpose: "update", Retries: 2, Failure: true, Message: msg("x"), Subrefs: []string{"a/b"}},
			false},
		{"no start time: started now, to be stored",
			progress.Record{Purpose: "create"},
			HandlerState{Started: now, Purpose: "create"},
			true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := FromRecord(tt.r, now)
			if diff := cmp.Diff(tt.want, *st, ignoreOrigin); diff != "" {
				t.Errorf("FromRecord() -want +got:\n%s", diff)
			}
			if st.Active {
				t.Error("a loaded state must start inactive")
			}
			if got := st.Changed(); got != tt.wantChanged {
				t.Errorf("Changed() = %v, want %v", got, tt.wantChanged)
			}
			st.Retries++
			if !st.Changed() {
				t.Error("Changed() = false after a change")
			}
		})
	}
	if !(&HandlerState{Started: t0}).Changed() {
		t.Error("a fresh state must count as changed (it was never stored)")
	}
}

func TestRecord(t *testing.T) {
	st := HandlerState{Active: true, Started: t0, Delayed: at(time.Second), Purpose: "create", Retries: 1, Message: msg("m")}
	want := progress.Record{Started: at(0), Delayed: at(time.Second), Purpose: "create", Retries: 1, Message: msg("m")}
	if diff := cmp.Diff(want, st.Record()); diff != "" {
		t.Errorf("Record() -want +got:\n%s", diff)
	}
}

func TestWithOutcome(t *testing.T) {
	now := t0.Add(5 * time.Second)
	running := HandlerState{Active: true, Started: t0, Purpose: "create", Retries: 1, Delayed: at(time.Second), Message: msg("earlier")}
	tests := []struct {
		name string
		from HandlerState
		o    Outcome
		want HandlerState
	}{
		{"success", running, Outcome{Final: true, Result: "r"},
			HandlerState{Active: true, Started: t0, Stopped: &now, Purpose: "create", Retries: 2, Success: true}},
		{"temporary failure", running, Outcome{Err: errors.New("not yet"), Delay: dur(2 * time.Second)},
			HandlerState{Active: true, Started: t0, Delayed: at(7 * time.Second), Purpose: "create", Retries: 2, Message: msg("not yet")}},
		{"final failure", running, Outcome{Final: true, Err: NewPermanentError("nope")},
			HandlerState{Active: true, Started: t0, Stopped: &now, Purpose: "create", Retries: 2, Failure: true, Message: msg("nope")}},
		{"an ignored error is a success", running, Outcome{Final: true},
			HandlerState{Active: true, Started: t0, Stopped: &now, Purpose: "create", Retries: 2, Success: true}},
		{"not final without a delay", running, Outcome{Err: errors.New("x")},
			HandlerState{Active: true, Started: t0, Purpose: "create", Retries: 2, Message: msg("x")}},
		{"stopped is kept once set", HandlerState{Started: t0, Stopped: at(time.Second), Retries: 3, Subrefs: []string{"s"}}, Outcome{Final: true},
			HandlerState{Started: t0, Stopped: at(time.Second), Retries: 4, Success: true, Subrefs: []string{"s"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			from := tt.from
			got := from.WithOutcome(tt.o, now)
			if diff := cmp.Diff(tt.want, *got, ignoreOrigin); diff != "" {
				t.Errorf("WithOutcome() -want +got:\n%s", diff)
			}
			if diff := cmp.Diff(tt.from, from, ignoreOrigin); diff != "" {
				t.Errorf("WithOutcome() changed the original -want +got:\n%s", diff)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	body := map[string]any{"metadata": map[string]any{"annotations": map[string]any{
		"kopf.zalando.org/b":          `{"started":"2100-01-02T03:04:05.000000+00:00","purpose":"update","retries":2}`,
		"kopf.zalando.org/broken":     `{"retries":"many"}`,
		"kopf.zalando.org/a":          `{"purpose":"create","success":true}`,
		"kopf.zalando.org/not-listed": `{"retries":9}`,
	}}}
	now := t0.Add(time.Hour)
	type failure struct{ ID, Err string }
	var failures []failure
	st := Load(body, progress.NewAnnotations(), []string{"a", "missing", "broken", "b"}, now, func(id string, err error) {
		failures = append(failures, failure{id, err.Error()})
	})
	if diff := cmp.Diff([]string{"a", "b"}, st.Order); diff != "" {
		t.Errorf("Order -want +got:\n%s", diff)
	}
	want := map[string]*HandlerState{
		"a": {Started: now, Purpose: "create", Success: true},
		"b": {Started: t0, Purpose: "update", Retries: 2},
	}
	if diff := cmp.Diff(want, st.Handlers, ignoreOrigin); diff != "" {
		t.Errorf("Handlers -want +got:\n%s", diff)
	}
	if len(failures) != 1 || failures[0].ID != "broken" || !strings.Contains(failures[0].Err, "kopf.zalando.org/broken") {
		t.Errorf("onError calls = %+v, want one for %q naming its annotation", failures, "broken")
	}
	if st.Purpose != "" {
		t.Errorf("Purpose = %q before Activate", st.Purpose)
	}
}

// newState builds a state from (id, state) pairs in order.
func newState(purpose string, pairs ...any) *State {
	st := &State{Purpose: purpose, Handlers: map[string]*HandlerState{}}
	for i := 0; i < len(pairs); i += 2 {
		id := pairs[i].(string)
		h := pairs[i+1].(HandlerState)
		st.Order = append(st.Order, id)
		st.Handlers[id] = &h
	}
	return st
}

func TestActivate(t *testing.T) {
	now := t0.Add(time.Minute)
	st := newState("",
		"resume_fn", HandlerState{Started: t0, Purpose: "resume", Retries: 1},
		"old_fn", HandlerState{Started: t0, Purpose: "create", Retries: 1},
	)
	st.Activate("update", []string{"new_fn", "resume_fn"}, now)
	if st.Purpose != "update" {
		t.Errorf("Purpose = %q, want update", st.Purpose)
	}
	if diff := cmp.Diff([]string{"resume_fn", "old_fn", "new_fn"}, st.Order); diff != "" {
		t.Errorf("Order -want +got:\n%s", diff)
	}
	want := map[string]*HandlerState{
		"resume_fn": {Active: true, Started: t0, Purpose: "update", Retries: 1},
		"old_fn":    {Started: t0, Purpose: "create", Retries: 1},
		"new_fn":    {Active: true, Started: now, Purpose: "update"},
	}
	if diff := cmp.Diff(want, st.Handlers, ignoreOrigin); diff != "" {
		t.Errorf("Handlers -want +got:\n%s", diff)
	}
}

func TestDrop(t *testing.T) {
	st := newState("create", "a", HandlerState{}, "b", HandlerState{}, "c", HandlerState{})
	st.Drop("b")
	st.Drop("missing")
	if diff := cmp.Diff([]string{"a", "c"}, st.Order); diff != "" {
		t.Errorf("Order -want +got:\n%s", diff)
	}
	if _, ok := st.Handlers["b"]; ok || len(st.Handlers) != 2 {
		t.Errorf("Handlers = %v after dropping b", st.Handlers)
	}
}

func TestExtrasAndCounts(t *testing.T) {
	st := newState("update",
		"u1", HandlerState{Purpose: "update", Success: true},
		"u2", HandlerState{Purpose: "update", Failure: true},
		"u3", HandlerState{Purpose: "update"},
		"any", HandlerState{Success: true},
		"c1", HandlerState{Purpose: "create", Success: true},
		"c2", HandlerState{Purpose: "create"},
		"c3", HandlerState{Purpose: "create"},
		"r1", HandlerState{Purpose: "resume", Failure: true},
	)
	wantExtras := map[string]Counts{
		"create": {Success: 1, Running: 2},
		"resume": {Failure: 1},
	}
	if diff := cmp.Diff(wantExtras, st.Extras("update")); diff != "" {
		t.Errorf("Extras() -want +got:\n%s", diff)
	}
	if diff := cmp.Diff(Counts{Success: 2, Failure: 1, Running: 1}, st.Counts()); diff != "" {
		t.Errorf("Counts() -want +got:\n%s", diff)
	}
	st.Purpose = ""
	if diff := cmp.Diff(Counts{Success: 3, Failure: 2, Running: 3}, st.Counts()); diff != "" {
		t.Errorf("Counts() without a purpose -want +got:\n%s", diff)
	}
	if got := newState("create", "a", HandlerState{Purpose: "create"}).Extras("create"); len(got) != 0 {
		t.Errorf("Extras() = %v, want none", got)
	}
}

func TestDone(t *testing.T) {
	tests := []struct {
		name string
		st   *State
		want bool
	}{
		{"no handlers", newState("create"), true},
		{"all active finished", newState("create", "a", HandlerState{Active: true, Success: true}, "b", HandlerState{Active: true, Failure: true}), true},
		{"an active one running", newState("create", "a", HandlerState{Active: true, Success: true}, "b", HandlerState{Active: true}), false},
		{"an active one sleeping", newState("create", "a", HandlerState{Active: true, Delayed: at(time.Hour)}), false},
		{"inactive ones do not count", newState("create", "a", HandlerState{Active: true, Success: true}, "b", HandlerState{}), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.st.Done(); got != tt.want {
				t.Errorf("Done() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestDelay(t *testing.T) {
	now := t0.Add(10 * time.Second)
	tests := []struct {
		name   string
		st     *State
		want   time.Duration
		wantOK bool
	}{
		{"nothing waiting", newState("create"), 0, false},
		{"only finished ones", newState("create", "a", HandlerState{Active: true, Success: true, Delayed: at(time.Hour)}), 0, false},
		{"only inactive ones", newState("create", "a", HandlerState{Delayed: at(time.Hour)}), 0, false},
		{"the shortest", newState("create",
			"a", HandlerState{Active: true, Delayed: at(70 * time.Second)},
			"b", HandlerState{Active: true, Delayed: at(15 * time.Second)},
			"c", HandlerState{Active: true, Delayed: at(20 * time.Second)},
		), 5 * time.Second, true},
		{"due now without a delay", newState("create",
			"a", HandlerState{Active: true, Delayed: at(70 * time.Second)},
			"b", HandlerState{Active: true},
		), 0, true},
		{"overdue is zero", newState("create", "a", HandlerState{Active: true, Delayed: at(time.Second)}), 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := tt.st.Delay(now)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("Delay() = %v, %v; want %v, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestNext(t *testing.T) {
	now := t0.Add(10 * time.Second)
	tests := []struct {
		name       string
		st         *State
		candidates []string
		want       string
		wantOK     bool
	}{
		{"none", newState("create"), nil, "", false},
		{"registration order on ties", newState("create", "b", HandlerState{Active: true}, "a", HandlerState{Active: true}), []string{"a", "b"}, "a", true},
		{"fewest attempts first", newState("create",
			"a", HandlerState{Active: true, Retries: 2},
			"b", HandlerState{Active: true, Retries: 1},
			"c", HandlerState{Active: true, Retries: 1},
		), []string{"a", "b", "c"}, "b", true},
		{"sleeping ones are skipped", newState("create",
			"a", HandlerState{Active: true, Delayed: at(time.Minute)},
			"b", HandlerState{Active: true, Retries: 5},
		), []string{"a", "b"}, "b", true},
		{"finished ones are skipped", newState("create",
			"a", HandlerState{Active: true, Success: true},
			"b", HandlerState{Active: true, Failure: true},
		), []string{"a", "b"}, "", false},
		{"woken ones count", newState("create", "a", HandlerState{Active: true, Retries: 1, Delayed: at(time.Second)}), []string{"a"}, "a", true},
		{"candidates without a state are skipped", newState("create", "a", HandlerState{Active: true}), []string{"ghost", "a"}, "a", true},
		{"only candidates", newState("create", "a", HandlerState{Active: true}, "b", HandlerState{Active: true}), []string{"b"}, "b", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := tt.st.Next(tt.candidates, now)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("Next() = %q, %v; want %q, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestStanding(t *testing.T) {
	now := t0.Add(10 * time.Second)
	tests := []struct {
		name string
		st   *State
		want Standing
	}{
		{"no handlers", newState("create"), Standing{}},
		{"not run yet", newState("create", "a", HandlerState{Active: true}), Standing{}},
		{"succeeded", newState("create", "a", HandlerState{Active: true, Success: true}), Standing{}},
		{"sleeping until a retry", newState("create", "a", HandlerState{Active: true, Retries: 1, Delayed: at(time.Minute)}), Standing{Retrying: true}},
		{"due for its retry now", newState("create", "a", HandlerState{Active: true, Retries: 1, Delayed: at(10 * time.Second)}), Standing{}},
		{"failed for good", newState("create", "a", HandlerState{Active: true, Failure: true}), Standing{Failed: true}},
		{"one failed, another retrying", newState("create",
			"a", HandlerState{Active: true, Failure: true},
			"b", HandlerState{Active: true, Delayed: at(time.Minute)},
		), Standing{Retrying: true, Failed: true}},
		{"inactive ones do not count", newState("update",
			"a", HandlerState{Purpose: "create", Failure: true},
			"b", HandlerState{Purpose: "create", Delayed: at(time.Minute)},
		), Standing{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.st.Standing(now)); diff != "" {
				t.Errorf("Standing() -want +got:\n%s", diff)
			}
		})
	}
}
