package cause

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestStopReasonString(t *testing.T) {
	tests := []struct {
		reason StopReason
		want   string
	}{
		{0, "NONE"},
		{StopDone, "DONE"},
		{StopFiltersMismatch, "FILTERS_MISMATCH"},
		{StopOperatorPausing, "OPERATOR_PAUSING"},
		{StopResourceDeleted | StopSignalled | StopCancelled, "RESOURCE_DELETED|DAEMON_SIGNALLED|DAEMON_CANCELLED"},
		{StopAbandoned | StopOperatorExiting, "OPERATOR_EXITING|DAEMON_ABANDONED"},
		{StopDone | StopFiltersMismatch | StopResourceDeleted | StopOperatorPausing | StopOperatorExiting | StopSignalled | StopCancelled | StopAbandoned,
			"DONE|FILTERS_MISMATCH|RESOURCE_DELETED|OPERATOR_PAUSING|OPERATOR_EXITING|DAEMON_SIGNALLED|DAEMON_CANCELLED|DAEMON_ABANDONED"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.reason.String()); diff != "" {
				t.Errorf("String() (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff("stopped: "+tt.want, tt.reason.Error()); diff != "" {
				t.Errorf("Error() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStopReasonIs(t *testing.T) {
	deleted := StopResourceDeleted | StopSignalled | StopCancelled
	tests := []struct {
		name   string
		err    error
		target error
		want   bool
	}{
		{"a contained flag", deleted, StopResourceDeleted, true},
		{"another contained flag", deleted, StopCancelled, true},
		{"several contained flags", deleted, StopSignalled | StopCancelled, true},
		{"all flags", deleted, deleted, true},
		{"a missing flag", deleted, StopOperatorExiting, false},
		{"partly missing flags", deleted, StopCancelled | StopAbandoned, false},
		{"no flags", deleted, StopReason(0), false},
		{"another error type", deleted, context.Canceled, false},
		{"wrapped", fmt.Errorf("daemon: %w", deleted), StopResourceDeleted, true},
		{"wrapped, missing", fmt.Errorf("daemon: %w", deleted), StopFiltersMismatch, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := errors.Is(tt.err, tt.target); got != tt.want {
				t.Errorf("errors.Is(%v, %v) = %v, want %v", tt.err, tt.target, got, tt.want)
			}
		})
	}
}

func TestStopReasonAsContextCause(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(StopOperatorExiting | StopCancelled)
	var got StopReason
	if !errors.As(context.Cause(ctx), &got) {
		t.Fatalf("the cause %v is not a StopReason", context.Cause(ctx))
	}
	if diff := cmp.Diff("OPERATOR_EXITING|DAEMON_CANCELLED", got.String()); diff != "" {
		t.Errorf("cause (-want +got):\n%s", diff)
	}
}
