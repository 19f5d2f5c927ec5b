package execution

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kopf-go/kopf/internal/contain"
)

// t0 is when the handlers' first attempts started in these tests.
var t0 = time.Date(2100, 1, 2, 3, 4, 5, 0, time.UTC)

func dur(d time.Duration) *time.Duration { return &d }

// outcome is an Outcome in a form cmp can compare: the error by its Go
// type and message.
type outcome struct {
	Final   bool
	ErrType string
	ErrMsg  string
	Delay   *time.Duration
	Result  any
	// Panicked: the outcome tells the handler's panic.
	Panicked bool
}

func flatten(o Outcome) outcome {
	out := outcome{Final: o.Final, Delay: o.Delay, Result: o.Result, Panicked: o.Panic != nil}
	if o.Err != nil {
		out.ErrType = reflect.TypeOf(o.Err).String()
		out.ErrMsg = o.Err.Error()
	}
	return out
}

// behaviour returns a handler body that fails or succeeds as told.
func returns(result any, err error) func(context.Context) (any, error) {
	return func(context.Context) (any, error) { return result, err }
}

func TestExecute(t *testing.T) {
	boom := errors.New("boom")
	defaults := Defaults{Errors: ErrorsTemporary, Backoff: 60 * time.Second}
	tests := []struct {
		name     string
		h        Handler
		retries  int           // attempts made before this one
		runtime  time.Duration // time since the first attempt
		call     func(context.Context) (any, error)
		want     outcome
		wantLogs []logLine
		notCall  bool
	}{
		{name: "success",
			h: Handler{ID: "fn"}, call: returns(map[string]any{"message": "hello"}, nil),
			want:     outcome{Final: true, Result: map[string]any{"message": "hello"}},
			wantLogs: []logLine{{Level: "info", Msg: "Handler 'fn' succeeded."}}},
		{name: "success of a daemon",
			h: Handler{ID: "fn", Title: "Daemon"}, call: returns(nil, nil),
			want:     outcome{Final: true},
			wantLogs: []logLine{{Level: "info", Msg: "Daemon 'fn' succeeded."}}},
		{name: "temporary error",
			h: Handler{ID: "fn"}, call: returns(nil, NewTemporaryError("not yet", 2*time.Second)),
			want:     outcome{ErrType: "*failure.TemporaryError", ErrMsg: "not yet", Delay: dur(2 * time.Second)},
			wantLogs: []logLine{{Level: "error", Msg: "Handler 'fn' failed temporarily: not yet"}}},
		{name: "temporary error with no delay",
			h: Handler{ID: "fn"}, call: returns(nil, NewTemporaryError("again", 0)),
			want:     outcome{ErrType: "*failure.TemporaryError", ErrMsg: "again", Delay: dur(0)},
			wantLogs: []logLine{{Level: "error", Msg: "Handler 'fn' failed temporarily: again"}}},
		{name: "wrapped temporary error",
			h: Handler{ID: "fn"}, call: returns(nil, fmt.Errorf("outer: %w", Temporary(boom, time.Second))),
			want:     outcome{ErrType: "*fmt.wrapError", ErrMsg: "outer: boom", Delay: dur(time.Second)},
			wantLogs: []logLine{{Level: "error", Msg: "Handler 'fn' failed temporarily: outer: boom"}}},
		{name: "temporary error that would exceed the retries",
			h: Handler{ID: "fn", Retries: 3}, retries: 2, call: returns(nil, NewTemporaryError("not yet", time.Second)),
			want: outcome{Final: true, ErrType: "*execution.HandlerRetriesError",
				ErrMsg: "Handler 'fn' failed temporarily but will exceed 3 retries: not yet"},
			wantLogs: []logLine{{Level: "error", Msg: "Handler 'fn' failed temporarily but will exceed 3 retries: not yet"}}},
		{name: "temporary error within the retries",
			h: Handler{ID: "fn", Retries: 3}, retries: 1, call: returns(nil, NewTemporaryError("not yet", time.Second)),
			want:     outcome{ErrType: "*failure.TemporaryError", ErrMsg: "not yet", Delay: dur(time.Second)},
			wantLogs: []logLine{{Level: "error", Msg: "Handler 'fn' failed temporarily: not yet"}}},
		{name: "temporary error that would time out",
			h: Handler{ID: "fn", Timeout: 10 * time.Second}, runtime: 5 * time.Second, call: returns(nil, NewTemporaryError("not yet", 5*time.Second)),
			want: outcome{Final: true, ErrType: "*execution.HandlerTimeoutError",
				ErrMsg: "Handler 'fn' failed temporarily but will time out after 10 seconds: not yet"},
			wantLogs: []logLine{{Level: "error", Msg: "Handler 'fn' failed temporarily but will time out after 10 seconds: not yet"}}},
		{name: "temporary error just within the timeout",
			h: Handler{ID: "fn", Timeout: 10 * time.Second}, runtime: 5 * time.Second, call: returns(nil, NewTemporaryError("not yet", 4999*time.Millisecond)),
			want:     outcome{ErrType: "*failure.TemporaryError", ErrMsg: "not yet", Delay: dur(4999 * time.Millisecond)},
			wantLogs: []logLine{{Level: "error", Msg: "Handler 'fn' failed temporarily: not yet"}}},
		{name: "the timeout look-ahead goes before the retries one",
			h: Handler{ID: "fn", Timeout: 2500 * time.Millisecond, Retries: 1}, runtime: 2 * time.Second, call: returns(nil, NewTemporaryError("x", time.Second)),
			want: outcome{Final: true, ErrType: "*execution.HandlerTimeoutError",
				ErrMsg: "Handler 'fn' failed temporarily but will time out after 2.5 seconds: x"},
			wantLogs: []logLine{{Level: "error", Msg: "Handler 'fn' failed temporarily but will time out after 2.5 seconds: x"}}},
		{name: "permanent error",
			h: Handler{ID: "fn", Retries: 5}, call: returns(nil, NewPermanentError("nope")),
			want:     outcome{Final: true, ErrType: "*failure.PermanentError", ErrMsg: "nope"},
			wantLogs: []logLine{{Level: "error", Msg: "Handler 'fn' failed permanently: nope"}}},
		{name: "wrapped permanent error",
			h: Handler{ID: "fn"}, call: returns(nil, fmt.Errorf("outer: %w", Permanent(boom))),
			want:     outcome{Final: true, ErrType: "*fmt.wrapError", ErrMsg: "outer: boom"},
			wantLogs: []logLine{{Level: "error", Msg: "Handler 'fn' failed permanently: outer: boom"}}},
		{name: "arbitrary error, temporary by default",
			h: Handler{ID: "fn"}, call: returns("ignored result", boom),
			want:     outcome{ErrType: "*errors.errorString", ErrMsg: "boom", Delay: dur(60 * time.Second)},
			wantLogs: []logLine{{Level: "error", Msg: "Handler 'fn' failed with an exception and will try again in 60 seconds: boom", WithErr: true}}},
		{name: "arbitrary error with the handler's backoff",
			h: Handler{ID: "fn", Backoff: dur(1500 * time.Millisecond)}, call: returns(nil, boom),
			want:     outcome{ErrType: "*errors.errorString", ErrMsg: "boom", Delay: dur(1500 * time.Millisecond)},
			wantLogs: []logLine{{Level: "error", Msg: "Handler 'fn' failed with an exception and will try again in 1.5 seconds: boom", WithErr: true}}},
		{name: "arbitrary error that would exceed the retries",
			h: Handler{ID: "fn", Retries: 3}, retries: 2, call: returns(nil, boom),
			want: outcome{Final: true, ErrType: "*execution.HandlerRetriesError",
				ErrMsg: "Handler 'fn' failed with an exception and will stop now (it would exceed 3 retries on the next attempt): boom"},
			wantLogs: []logLine{{Level: "error", Msg: "Handler 'fn' failed with an exception and will stop now (it would exceed 3 retries on the next attempt): boom", WithErr: true}}},
		{name: "arbitrary error that would time out",
			h: Handler{ID: "fn", Timeout: 6 * time.Second, Backoff: dur(time.Second)}, runtime: 5 * time.Second, call: returns(nil, boom),
			want: outcome{Final: true, ErrType: "*execution.HandlerTimeoutError",
				ErrMsg: "Handler 'fn' failed with an exception and will stop now (it would time out in 6 seconds on the next attempt): boom"},
			wantLogs: []logLine{{Level: "error", Msg: "Handler 'fn' failed with an exception and will stop now (it would time out in 6 seconds on the next attempt): boom", WithErr: true}}},
		{name: "errors permanent",
			h: Handler{ID: "fn", Errors: ErrorsPermanent, Retries: 3}, retries: 2, call: returns(nil, boom),
			want:     outcome{Final: true, ErrType: "*errors.errorString", ErrMsg: "boom"},
			wantLogs: []logLine{{Level: "error", Msg: "Handler 'fn' failed with an exception and will stop now: boom", WithErr: true}}},
		{name: "errors ignored counts as a success without a result",
			h: Handler{ID: "fn", Errors: ErrorsIgnored}, call: returns("result", boom),
			want:     outcome{Final: true},
			wantLogs: []logLine{{Level: "error", Msg: "Handler 'fn' failed with an exception and will ignore it: boom", WithErr: true}}},
		{name: "errors ignored leaves temporary errors temporary",
			h: Handler{ID: "fn", Errors: ErrorsIgnored}, call: returns(nil, NewTemporaryError("wait", time.Second)),
			want:     outcome{ErrType: "*failure.TemporaryError", ErrMsg: "wait", Delay: dur(time.Second)},
			wantLogs: []logLine{{Level: "error", Msg: "Handler 'fn' failed temporarily: wait"}}},
		{name: "errors ignored leaves permanent errors permanent",
			h: Handler{ID: "fn", Errors: ErrorsIgnored}, call: returns(nil, NewPermanentError("stop")),
			want:     outcome{Final: true, ErrType: "*failure.PermanentError", ErrMsg: "stop"},
			wantLogs: []logLine{{Level: "error", Msg: "Handler 'fn' failed permanently: stop"}}},
		{name: "the handler's mode wins over the default",
			h: Handler{ID: "fn", Errors: ErrorsTemporary, Backoff: dur(0)}, call: returns(nil, boom),
			want:     outcome{ErrType: "*errors.errorString", ErrMsg: "boom", Delay: dur(0)},
			wantLogs: []logLine{{Level: "error", Msg: "Handler 'fn' failed with an exception and will try again in 0 seconds: boom", WithErr: true}}},
		{name: "timed out strictly before the attempt",
			h: Handler{ID: "fn", Timeout: 10 * time.Second}, runtime: 10 * time.Second, notCall: true,
			want:     outcome{Final: true, ErrType: "*execution.HandlerTimeoutError", ErrMsg: "Handler 'fn' has timed out after 0:00:10."},
			wantLogs: []logLine{{Level: "error", Msg: "Handler 'fn' has timed out after 0:00:10."}}},
		{name: "timed out with a fraction of a second",
			h: Handler{ID: "fn", Timeout: 2 * time.Second}, runtime: 2500 * time.Millisecond, notCall: true,
			want:     outcome{Final: true, ErrType: "*execution.HandlerTimeoutError", ErrMsg: "Handler 'fn' has timed out after 0:00:02.500000."},
			wantLogs: []logLine{{Level: "error", Msg: "Handler 'fn' has timed out after 0:00:02.500000."}}},
		{name: "just before the timeout, the attempt runs",
			h: Handler{ID: "fn", Timeout: 10 * time.Second}, runtime: 10*time.Second - time.Microsecond, call: returns(nil, nil),
			want:     outcome{Final: true},
			wantLogs: []logLine{{Level: "info", Msg: "Handler 'fn' succeeded."}}},
		{name: "retries exceeded strictly before the attempt",
			h: Handler{ID: "fn", Retries: 3}, retries: 3, notCall: true,
			want:     outcome{Final: true, ErrType: "*execution.HandlerRetriesError", ErrMsg: "Handler 'fn' has exceeded 3 retries."},
			wantLogs: []logLine{{Level: "error", Msg: "Handler 'fn' has exceeded 3 retries."}}},
		{name: "the last allowed attempt runs",
			h: Handler{ID: "fn", Retries: 3}, retries: 2, call: returns(nil, nil),
			want:     outcome{Final: true},
			wantLogs: []logLine{{Level: "info", Msg: "Handler 'fn' succeeded."}}},
		{name: "no limits by default",
			h: Handler{ID: "fn"}, retries: 1000, runtime: 1000 * time.Hour, call: returns(nil, nil),
			want:     outcome{Final: true},
			wantLogs: []logLine{{Level: "info", Msg: "Handler 'fn' succeeded."}}},
		{name: "a panic is an arbitrary error",
			h: Handler{ID: "fn"}, call: func(context.Context) (any, error) { panic("kaboom") },
			want: outcome{ErrType: "*contain.Panic", ErrMsg: "panic: kaboom", Delay: dur(60 * time.Second), Panicked: true},
			wantLogs: []logLine{{Level: "error", Msg: "Handler 'fn' failed with an exception and will try again in 60 seconds: panic: kaboom",
				WithErr: true, Keys: []string{"stack"}}}},
		{name: "a panic with errors permanent",
			h: Handler{ID: "fn", Errors: ErrorsPermanent}, call: func(context.Context) (any, error) { panic(boom) },
			want: outcome{Final: true, ErrType: "*contain.Panic", ErrMsg: "panic: boom", Panicked: true},
			wantLogs: []logLine{{Level: "error", Msg: "Handler 'fn' failed with an exception and will stop now: panic: boom",
				WithErr: true, Keys: []string{"stack"}}}},
		{name: "a panic with errors ignored: no error, but the panic is told",
			h: Handler{ID: "fn", Errors: ErrorsIgnored}, call: func(context.Context) (any, error) { panic(boom) },
			want: outcome{Final: true, Panicked: true},
			wantLogs: []logLine{{Level: "error", Msg: "Handler 'fn' failed with an exception and will ignore it: panic: boom",
				WithErr: true, Keys: []string{"stack"}}}},
		{name: "a panic past the retries",
			h: Handler{ID: "fn", Retries: 2}, retries: 1, call: func(context.Context) (any, error) { panic(boom) },
			want: outcome{Final: true, ErrType: "*execution.HandlerRetriesError", Panicked: true,
				ErrMsg: "Handler 'fn' failed with an exception and will stop now (it would exceed 2 retries on the next attempt): panic: boom"},
			wantLogs: []logLine{{Level: "error", Msg: "Handler 'fn' failed with an exception and will stop now (it would exceed 2 retries on the next attempt): panic: boom",
				WithErr: true, Keys: []string{"stack"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sink := newCapture()
			st := &HandlerState{Active: true, Started: t0, Retries: tt.retries}
			called := 0
			call := func(ctx context.Context) (any, error) {
				called++
				if tt.call == nil {
					return nil, nil
				}
				return tt.call(ctx)
			}
			got := Execute(sink.context(), &tt.h, st, t0.Add(tt.runtime), defaults, call)
			if diff := cmp.Diff(tt.want, flatten(got)); diff != "" {
				t.Errorf("Execute() -want +got:\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantLogs, sink.Lines()); diff != "" {
				t.Errorf("log lines -want +got:\n%s", diff)
			}
			if wantCalls := map[bool]int{true: 0, false: 1}[tt.notCall]; called != wantCalls {
				t.Errorf("the handler was called %d times, want %d", called, wantCalls)
			}
			if diff := cmp.Diff([]string{fmt.Sprintf("%s is invoked.", tt.h)}, sink.Debug()); diff != "" {
				t.Errorf("debug lines -want +got:\n%s", diff)
			}
		})
	}
}

func TestExecuteKeepsTheErrorTypes(t *testing.T) {
	temporary := NewTemporaryError("t", time.Second)
	got := Execute(context.Background(), &Handler{ID: "fn"}, &HandlerState{Started: t0}, t0, Defaults{}, returns(nil, temporary))
	if got.Err != temporary {
		t.Errorf("Execute() error = %#v, want the handler's own error", got.Err)
	}
	var panicked *contain.Panic
	got = Execute(context.Background(), &Handler{ID: "fn"}, &HandlerState{Started: t0}, t0, Defaults{Errors: ErrorsTemporary},
		func(context.Context) (any, error) { panic(42) })
	if !errors.As(got.Err, &panicked) || panicked.Value != 42 || !strings.Contains(string(panicked.Stack), "execute_test.go") {
		t.Errorf("Execute() error = %#v, want a *contain.Panic with the value and the stack", got.Err)
	}
}

// TestRetriesCountAttempts runs a handler that always fails until it is
// final, as the cycle would across cycles: "Retries: 3" is three calls.
func TestRetriesCountAttempts(t *testing.T) {
	tests := []struct {
		name    string
		err     error
		message string
	}{
		{"arbitrary error", errors.New("boom"), "Handler 'fn' failed with an exception and will stop now (it would exceed 3 retries on the next attempt): boom"},
		{"temporary error", NewTemporaryError("not yet", 0), "Handler 'fn' failed temporarily but will exceed 3 retries: not yet"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := Handler{ID: "fn", Retries: 3, Backoff: dur(0)}
			st := &HandlerState{Active: true, Started: t0, Purpose: "create"}
			now := t0
			calls := 0
			for range 10 {
				o := Execute(context.Background(), &h, st, now, Defaults{Errors: ErrorsTemporary}, func(context.Context) (any, error) {
					calls++
					return nil, tt.err
				})
				st = st.WithOutcome(o, now)
				if st.Finished() {
					break
				}
				now = now.Add(time.Second)
			}
			if calls != 3 {
				t.Errorf("the handler was called %d times, want 3", calls)
			}
			want := HandlerState{Active: true, Started: t0, Stopped: &now, Purpose: "create", Retries: 3, Failure: true, Message: &tt.message}
			if diff := cmp.Diff(want, *st, cmp.AllowUnexported(HandlerState{})); diff != "" {
				t.Errorf("final state -want +got:\n%s", diff)
			}
		})
	}
}

func TestExecuteContextDeadline(t *testing.T) {
	tests := []struct {
		name    string
		timeout time.Duration
		want    time.Time
		wantOK  bool
	}{
		{"started plus timeout", 10 * time.Second, t0.Add(10 * time.Second), true},
		{"no timeout, no deadline", 0, time.Time{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got time.Time
			var ok bool
			st := &HandlerState{Started: t0}
			Execute(context.Background(), &Handler{ID: "fn", Timeout: tt.timeout}, st, t0.Add(3*time.Second), Defaults{}, func(ctx context.Context) (any, error) {
				got, ok = ctx.Deadline()
				return nil, nil
			})
			if ok != tt.wantOK || !got.Equal(tt.want) {
				t.Errorf("ctx.Deadline() = %v, %v; want %v, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestExecuteWithoutALogger(t *testing.T) {
	// A context without a logger must not break anything.
	got := Execute(context.Background(), &Handler{ID: "fn"}, &HandlerState{Started: t0}, t0, Defaults{}, returns(1, nil))
	if diff := cmp.Diff(outcome{Final: true, Result: 1}, flatten(got)); diff != "" {
		t.Errorf("Execute() -want +got:\n%s", diff)
	}
}

func TestHandlerString(t *testing.T) {
	tests := map[string]Handler{
		"Handler 'create_fn'":     {ID: "create_fn"},
		"Daemon 'monitor'":        {ID: "monitor", Title: "Daemon"},
		"Timer 'tick'":            {ID: "tick", Title: "Timer"},
		"Handler 'fn/spec.field'": {ID: "fn/spec.field"},
	}
	for want, h := range tests {
		if got := h.String(); got != want {
			t.Errorf("String() = %q, want %q", got, want)
		}
	}
}

func TestDurationFormats(t *testing.T) {
	tests := []struct {
		d            time.Duration
		py, pySecond string
	}{
		{0, "0:00:00", "0"},
		{10 * time.Second, "0:00:10", "10"},
		{2500 * time.Millisecond, "0:00:02.500000", "2.5"},
		{time.Microsecond, "0:00:00.000001", "0.000001"},
		{time.Hour + 2*time.Minute + 3*time.Second, "1:02:03", "3723"},
		{60 * time.Second, "0:01:00", "60"},
		{24 * time.Hour, "1 day, 0:00:00", "86400"},
		{49*time.Hour + 500*time.Millisecond, "2 days, 1:00:00.500000", "176400.5"},
	}
	for _, tt := range tests {
		if got := timedelta(tt.d); got != tt.py {
			t.Errorf("timedelta(%v) = %q, want %q", tt.d, got, tt.py)
		}
		if got := Seconds(tt.d); got != tt.pySecond {
			t.Errorf("Seconds(%v) = %q, want %q", tt.d, got, tt.pySecond)
		}
	}
}
