package execution

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestClassify runs attempts through Execute and classifies their
// outcomes, so that each class is pinned to the behaviour that makes it.
func TestClassify(t *testing.T) {
	boom := errors.New("boom")
	defaults := Defaults{Errors: ErrorsTemporary, Backoff: time.Minute}
	type result struct {
		Class     Class
		NotCalled bool
	}
	tests := []struct {
		name    string
		h       Handler
		retries int
		runtime time.Duration
		call    func(context.Context) (any, error)
		want    result
	}{
		{"success", Handler{}, 0, 0, returns("ok", nil), result{Class: ClassSuccess}},
		{"success without a result", Handler{}, 0, 0, returns(nil, nil), result{Class: ClassSuccess}},
		{"temporary error", Handler{}, 0, 0, returns(nil, NewTemporaryError("later", time.Second)), result{Class: ClassTemporaryError}},
		{"arbitrary error in the temporary mode", Handler{}, 0, 0, returns(nil, boom), result{Class: ClassTemporaryError}},
		{"a panic is an arbitrary error", Handler{}, 0, 0, func(context.Context) (any, error) { panic("kaboom") }, result{Class: ClassTemporaryError}},
		{"permanent error", Handler{}, 0, 0, returns(nil, NewPermanentError("no")), result{Class: ClassPermanentError}},
		{"wrapped permanent error", Handler{}, 0, 0, returns(nil, fmt.Errorf("outer: %w", Permanent(boom))), result{Class: ClassPermanentError}},
		{"arbitrary error in the permanent mode", Handler{Errors: ErrorsPermanent}, 0, 0, returns(nil, boom), result{Class: ClassPermanentError}},
		{"arbitrary error in the ignored mode", Handler{Errors: ErrorsIgnored}, 0, 0, returns("dropped", boom), result{Class: ClassIgnoredError}},
		{"temporary error in the ignored mode", Handler{Errors: ErrorsIgnored}, 0, 0, returns(nil, NewTemporaryError("later", 0)), result{Class: ClassTemporaryError}},
		{"timed out before the attempt", Handler{Timeout: time.Second}, 0, time.Second, nil, result{Class: ClassTimeout, NotCalled: true}},
		{"would time out after a temporary error", Handler{Timeout: 10 * time.Second}, 0, 5 * time.Second,
			returns(nil, NewTemporaryError("later", 5*time.Second)), result{Class: ClassTimeout}},
		{"would time out after an arbitrary error", Handler{Timeout: 10 * time.Second}, 0, 5 * time.Second, returns(nil, boom), result{Class: ClassTimeout}},
		{"retries used up before the attempt", Handler{Retries: 2}, 2, 0, nil, result{Class: ClassRetriesExceeded, NotCalled: true}},
		{"the last retry fails", Handler{Retries: 2}, 1, 0, returns(nil, boom), result{Class: ClassRetriesExceeded}},
		{"the last retry fails temporarily", Handler{Retries: 2}, 1, 0, returns(nil, NewTemporaryError("later", 0)), result{Class: ClassRetriesExceeded}},
		{"the framework's permanent errors, returned by the handler", Handler{}, 0, 0,
			returns(nil, &HandlerRetriesError{Message: "passed on"}), result{Class: ClassRetriesExceeded}},
		{"sub-handlers pending", Handler{}, 0, 0, returns(nil, &ChildrenRetry{Delay: time.Second}), result{Class: ClassSubhandlersPending}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := &HandlerState{Active: true, Started: t0, Retries: tt.retries}
			call := tt.call
			if call == nil {
				call = func(context.Context) (any, error) { t.Error("the handler was called"); return nil, nil }
			}
			o := Execute(context.Background(), &tt.h, st, t0.Add(tt.runtime), defaults, call)
			if diff := cmp.Diff(tt.want, result{Class: Classify(o), NotCalled: o.NotCalled}); diff != "" {
				t.Errorf("-want +got:\n%s", diff)
			}
		})
	}
}

// TestClassifyCancelled: a handler that gives up because its context is
// cancelled (the operator or the daemon stops) is neither a success nor a
// failure.
func TestClassifyCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	st := &HandlerState{Active: true, Started: t0}
	o := Execute(ctx, &Handler{}, st, t0, Defaults{Errors: ErrorsTemporary}, func(ctx context.Context) (any, error) {
		return nil, ctx.Err()
	})
	if got := Classify(o); got != ClassCancelled {
		t.Errorf("Classify() = %q, want %q", got, ClassCancelled)
	}
}

// TestClassesAreWireNames pins the label values that dashboards and
// alerts are written against.
func TestClassesAreWireNames(t *testing.T) {
	want := []Class{"success", "temporary_error", "permanent_error", "timeout", "retries_exceeded",
		"ignored_error", "cancelled", "subhandlers_pending"}
	if diff := cmp.Diff(want, Classes); diff != "" {
		t.Errorf("Classes -want +got:\n%s", diff)
	}
}
