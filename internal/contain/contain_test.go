package contain

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var errBoom = errors.New("boom")

// panicky panics with v; its name must show on the stack of the panic.
func panicky(v any) { panic(v) }

func TestCall(t *testing.T) {
	tests := []struct {
		name      string
		fn        func()
		wantPanic bool
		wantValue any
		wantError string
	}{
		{name: "returns", fn: func() {}},
		{name: "panics with a string", fn: func() { panicky("kaboom") }, wantPanic: true, wantValue: "kaboom", wantError: "panic: kaboom"},
		{name: "panics with an error", fn: func() { panicky(errBoom) }, wantPanic: true, wantValue: errBoom, wantError: "panic: boom"},
		{name: "panics with a number", fn: func() { panicky(42) }, wantPanic: true, wantValue: 42, wantError: "panic: 42"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Call(tt.fn)
			if (p != nil) != tt.wantPanic {
				t.Fatalf("Call() = %v, want a panic: %v", p, tt.wantPanic)
			}
			if p == nil {
				return
			}
			if diff := cmp.Diff(tt.wantValue, p.Value, cmp.Comparer(func(a, b error) bool { return a == b })); diff != "" {
				t.Errorf("the panic's value (-want +got):\n%s", diff)
			}
			if got := p.Error(); got != tt.wantError {
				t.Errorf("Error() = %q, want %q", got, tt.wantError)
			}
			if !strings.Contains(string(p.Stack), "contain.panicky") {
				t.Errorf("the stack does not show the panicking function:\n%s", p.Stack)
			}
		})
	}
}

// TestCallRecoversNilPanics: panic(nil) is a panic too (Go 1.21 and
// later make it a *runtime.PanicNilError).
func TestCallRecoversNilPanics(t *testing.T) {
	p := Call(func() { panic(nil) })
	if p == nil || !strings.Contains(p.Error(), "nil") {
		t.Errorf("Call() = %v, want the nil panic", p)
	}
}

func TestValue(t *testing.T) {
	tests := []struct {
		name      string
		fn        func() bool
		want      bool
		wantPanic string
	}{
		{name: "true", fn: func() bool { return true }, want: true},
		{name: "false", fn: func() bool { return false }},
		{name: "panics: the zero value", fn: func() bool { panicky("no"); return true }, wantPanic: "panic: no"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, p := Value(tt.fn)
			if got != tt.want {
				t.Errorf("Value() = %v, want %v", got, tt.want)
			}
			gotPanic := ""
			if p != nil {
				gotPanic = p.Error()
			}
			if gotPanic != tt.wantPanic {
				t.Errorf("Value()'s panic = %q, want %q", gotPanic, tt.wantPanic)
			}
		})
	}
}

func TestResult(t *testing.T) {
	tests := []struct {
		name    string
		fn      func() (string, error)
		want    string
		wantErr string
	}{
		{name: "a result", fn: func() (string, error) { return "ok", nil }, want: "ok"},
		{name: "an error", fn: func() (string, error) { return "partial", errBoom }, want: "partial", wantErr: "boom"},
		{name: "a panic: the zero value and the panic", fn: func() (string, error) { panicky("no"); return "ok", nil }, wantErr: "panic: no"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Result(tt.fn)
			if got != tt.want {
				t.Errorf("Result() = %q, want %q", got, tt.want)
			}
			if gotErr := errText(err); gotErr != tt.wantErr {
				t.Errorf("Result()'s error = %q, want %q", gotErr, tt.wantErr)
			}
		})
	}
	_, err := Result(func() (int, error) { panicky(errBoom); return 0, nil })
	var p *Panic
	if !errors.As(err, &p) || p.Value != errBoom {
		t.Errorf("Result()'s error = %#v, want a *Panic with the value", err)
	}
	if errors.Is(err, errBoom) {
		t.Error("a panic's error unwraps to its value: a panic with a TemporaryError would pass for one")
	}
}

// TestUnwind: an unwinding panic passes through the Calls on its way
// (callbacks that call the engine back, such as a handler that runs its
// sub-handlers) and ends at the owner's Unwound, as the error it was given.
func TestUnwind(t *testing.T) {
	cause := fmt.Errorf("the storage failed: %w", &Panic{Value: "boom"})
	var innerReturned bool
	run := func() (err error) {
		defer Unwound(&err)
		p := Call(func() {
			if p := Call(func() { Unwind(cause) }); p != nil {
				t.Errorf("the inner Call contained the unwinding: %v", p)
			}
			innerReturned = true
		})
		if p != nil {
			t.Errorf("the outer Call contained the unwinding: %v", p)
		}
		return errors.New("the unit was not ended")
	}
	if err := run(); err != cause {
		t.Errorf("the unit ended with %v, want %v", err, cause)
	}
	if innerReturned {
		t.Error("the code after the unwinding call ran")
	}
}

// TestUnwoundLetsOtherPanicsGo: a panic that nobody contained is not the
// owner's to hide.
func TestUnwoundLetsOtherPanicsGo(t *testing.T) {
	p := Call(func() {
		var err error
		defer Unwound(&err)
		panicky("engine bug")
	})
	if p == nil || p.Value != "engine bug" {
		t.Errorf("the panic that reached the caller = %v, want the original one", p)
	}
}

func TestUnwoundWithoutPanic(t *testing.T) {
	err := func() (err error) {
		defer Unwound(&err)
		return errBoom
	}()
	if err != errBoom {
		t.Errorf("the unit's error = %v, want its own", err)
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// BenchmarkValue is the cost of containing one filter's call: the engine
// pays it for every filter it asks, several per cycle.
func BenchmarkValue(b *testing.B) {
	matched := 0
	for b.Loop() {
		if v, _ := Value(func() bool { return matched >= 0 }); v {
			matched++
		}
	}
}
