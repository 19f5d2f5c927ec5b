package execution

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestErrorTypes(t *testing.T) {
	cause := errors.New("cause")
	tests := []struct {
		name      string
		err       error
		msg       string
		unwraps   error
		permanent bool
		delay     *time.Duration
	}{
		{"NewTemporaryError", NewTemporaryError("not yet", 5*time.Second), "not yet", nil, false, dur(5 * time.Second)},
		{"Temporary", Temporary(cause, time.Second), "cause", cause, false, dur(time.Second)},
		{"wrapped Temporary", fmt.Errorf("ctx: %w", Temporary(cause, 0)), "ctx: cause", cause, false, dur(0)},
		{"NewPermanentError", NewPermanentError("nope"), "nope", nil, true, nil},
		{"Permanent", Permanent(cause), "cause", cause, true, nil},
		{"wrapped Permanent", fmt.Errorf("ctx: %w", Permanent(cause)), "ctx: cause", cause, true, nil},
		{"timeout", &HandlerTimeoutError{Message: "timed out"}, "timed out", nil, true, nil},
		{"retries", &HandlerRetriesError{Message: "exceeded"}, "exceeded", nil, true, nil},
		{"wrapped retries", fmt.Errorf("x: %w", &HandlerRetriesError{Message: "exceeded"}), "x: exceeded", nil, true, nil},
		{"arbitrary", cause, "cause", nil, false, nil},
		{"empty TemporaryError", &TemporaryError{}, "", nil, false, dur(0)},
		{"empty PermanentError", &PermanentError{}, "", nil, true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.msg {
				t.Errorf("Error() = %q, want %q", got, tt.msg)
			}
			if tt.unwraps != nil && !errors.Is(tt.err, tt.unwraps) {
				t.Errorf("errors.Is(%v, cause) = false", tt.err)
			}
			if got := isPermanent(tt.err); got != tt.permanent {
				t.Errorf("isPermanent() = %v, want %v", got, tt.permanent)
			}
			var temporary *TemporaryError
			isTemporary := errors.As(tt.err, &temporary)
			if isTemporary != (tt.delay != nil) {
				t.Fatalf("errors.As(TemporaryError) = %v, want %v", isTemporary, tt.delay != nil)
			}
			if isTemporary && temporary.Delay != *tt.delay {
				t.Errorf("Delay = %v, want %v", temporary.Delay, *tt.delay)
			}
		})
	}
}

func TestDefaultTemporaryDelay(t *testing.T) {
	if DefaultTemporaryDelay != 60*time.Second {
		t.Errorf("DefaultTemporaryDelay = %v, want Kopf's 60s", DefaultTemporaryDelay)
	}
}

func TestErrorsModeString(t *testing.T) {
	tests := map[ErrorsMode]string{
		ErrorsDefault:   "default",
		ErrorsTemporary: "temporary",
		ErrorsPermanent: "permanent",
		ErrorsIgnored:   "ignored",
		ErrorsMode(99):  "default",
	}
	for mode, want := range tests {
		if got := mode.String(); got != want {
			t.Errorf("ErrorsMode(%d).String() = %q, want %q", int(mode), got, want)
		}
	}
}
