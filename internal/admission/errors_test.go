package admission

import (
	"errors"
	"fmt"
	"testing"

	"github.com/kopf-go/kopf/internal/contain"
	"github.com/kopf-go/kopf/internal/execution"
)

func TestBestError(t *testing.T) {
	plain1, plain2 := errors.New("err1"), errors.New("err2")
	temp1, temp2 := execution.NewTemporaryError("err1", 0), execution.NewTemporaryError("err2", 0)
	perm1, perm2 := execution.NewPermanentError("err1"), execution.NewPermanentError("err2")
	adm1, adm2 := Error{Message: "err1"}, &Error{Message: "err2"}
	wrapped := fmt.Errorf("check: %w", adm2)
	tests := []struct {
		name string
		errs []error
		want error
	}{
		{"none", nil, nil},
		{"only successes", []error{nil, nil}, nil},
		{"one among successes", []error{nil, plain1, nil}, plain1},
		{"plain, same rank: the first", []error{plain1, plain2}, plain1},
		{"temporary, same rank: the first", []error{temp1, temp2}, temp1},
		{"permanent, same rank: the first", []error{perm1, perm2}, perm1},
		{"admission, same rank: the first", []error{adm1, Error{Message: "x"}}, adm1},
		{"temporary over plain", []error{plain1, temp2}, temp2},
		{"admission over plain", []error{plain1, adm2}, adm2},
		{"permanent over plain", []error{plain1, perm2}, perm2},
		{"permanent over temporary", []error{temp1, perm2}, perm2},
		{"admission over temporary", []error{temp1, adm2}, adm2},
		{"admission over permanent", []error{perm1, adm2}, adm2},
		{"admission over permanent, later", []error{adm1, perm2}, adm1},
		{"a wrapped admission error", []error{perm1, wrapped}, wrapped},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := bestError(tt.errs); got != tt.want {
				t.Errorf("bestError() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestStatusOf(t *testing.T) {
	tests := []struct {
		name        string
		err         error
		wantMessage string
		wantCode    int
	}{
		{"plain", errors.New("No!"), "No!", 500},
		{"permanent", execution.NewPermanentError("No!"), "No!", 500},
		{"temporary", execution.NewTemporaryError("No!", 0), "No!", 500},
		{"admission, no code", Error{Message: "No!"}, "No!", 500},
		{"admission with a code", Error{Message: "No!", Code: 123}, "No!", 123},
		{"admission by pointer", &Error{Message: "No!", Code: 555}, "No!", 555},
		{"wrapped admission error", fmt.Errorf("check: %w", Error{Message: "No!", Code: 422}), "check: No!", 422},
		{"a panic: nothing of its value", &contain.Panic{Value: "secret token abc"}, PanicMessage, 500},
		{"no message: the type", Error{}, "admission.Error", 500},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			message, code := statusOf(tt.err)
			if message != tt.wantMessage || code != tt.wantCode {
				t.Errorf("statusOf() = %q, %d; want %q, %d", message, code, tt.wantMessage, tt.wantCode)
			}
		})
	}
}

func TestOutcomeOf(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"no error", nil, "allowed"},
		{"admission error", Error{Message: "No!", Code: 422}, "denied"},
		{"admission error by pointer, wrapped", fmt.Errorf("check: %w", &Error{Message: "No!"}), "denied"},
		{"permanent error", execution.NewPermanentError("No!"), "denied"},
		{"temporary error", execution.NewTemporaryError("No!", 0), "denied"},
		{"arbitrary error", errors.New("boom"), "error"},
		{"panic", &contain.Panic{Value: "boom"}, "error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := outcomeOf(tt.err); got != tt.want {
				t.Errorf("outcomeOf() = %q, want %q", got, tt.want)
			}
		})
	}
}
