package posting

import (
	"errors"
	"fmt"
	"io/fs"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

type CustomError struct{}

func (*CustomError) Error() string { return "custom" }

type GenericError[T any] struct{ v T }

func (GenericError[T]) Error() string { return "generic" }

type unexportedError struct{}

func (unexportedError) Error() string { return "unexported" }

func TestReasonOfError(t *testing.T) {
	notFound := apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "p")
	tests := []struct {
		err  error
		want string
	}{
		{nil, "Error"},
		{errors.New("boom"), "Error"},
		{&CustomError{}, "CustomError"},
		{fmt.Errorf("wrapped: %w", &CustomError{}), "CustomError"},
		{fmt.Errorf("twice: %w", fmt.Errorf("once: %w", &fs.PathError{Op: "open", Err: fs.ErrNotExist})), "PathError"},
		{errors.Join(errors.New("a"), &CustomError{}), "Error"}, // the first of a join decides
		{errors.Join(&CustomError{}, errors.New("a")), "CustomError"},
		{notFound, "StatusError"},
		{GenericError[int]{}, "GenericError"},
		{unexportedError{}, "Error"},
	}
	for _, tt := range tests {
		if got := ReasonOfError(tt.err); got != tt.want {
			t.Errorf("ReasonOfError(%#v) = %q, want %q", tt.err, got, tt.want)
		}
	}
}

func TestMessageOfError(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		message string
		err     error
		want    string
	}{
		{"", nil, ""},
		{"message", nil, "message"},
		{"", boom, "boom"},
		{"message", boom, "message boom"},
	}
	for _, tt := range tests {
		if got := MessageOfError(tt.message, tt.err); got != tt.want {
			t.Errorf("MessageOfError(%q, %v) = %q, want %q", tt.message, tt.err, got, tt.want)
		}
	}
}
