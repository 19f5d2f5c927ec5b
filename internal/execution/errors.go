// Package execution runs handlers once per attempt and interprets what they
// return: success, temporary and permanent errors, the retry and timeout
// limits, and the per-handler state those outcomes lead to.
package execution

import (
	"errors"
	"time"

	"github.com/kopf-go/kopf/pkg/failure"
)

// ErrorsMode says what an arbitrary error returned by a handler means
// (the public failure.ErrorsMode).
type ErrorsMode = failure.ErrorsMode

// The modes, as Kopf's ErrorsMode.
const (
	ErrorsDefault   = failure.ErrorsDefault
	ErrorsTemporary = failure.ErrorsTemporary
	ErrorsPermanent = failure.ErrorsPermanent
	ErrorsIgnored   = failure.ErrorsIgnored
)

// DefaultTemporaryDelay is Kopf's default delay of a TemporaryError.
const DefaultTemporaryDelay = failure.DefaultTemporaryDelay

// TemporaryError and PermanentError are the handlers' own failures (the
// public failure types).
type (
	TemporaryError = failure.TemporaryError
	PermanentError = failure.PermanentError
)

// NewTemporaryError returns a TemporaryError with a message and a delay.
func NewTemporaryError(message string, delay time.Duration) *TemporaryError {
	return &TemporaryError{Err: errors.New(message), Delay: delay}
}

// Temporary wraps an error so that the handler is retried after the delay.
func Temporary(err error, delay time.Duration) error { return &TemporaryError{Err: err, Delay: delay} }

// NewPermanentError returns a PermanentError with a message.
func NewPermanentError(message string) *PermanentError {
	return &PermanentError{Err: errors.New(message)}
}

// Permanent wraps an error so that the handler is not retried.
func Permanent(err error) error { return &PermanentError{Err: err} }

// HandlerTimeoutError is the framework's permanent failure of a handler
// that ran out of its timeout.
type HandlerTimeoutError struct{ Message string }

func (e *HandlerTimeoutError) Error() string { return e.Message }

// HandlerRetriesError is the framework's permanent failure of a handler
// that used up its retries.
type HandlerRetriesError struct{ Message string }

func (e *HandlerRetriesError) Error() string { return e.Message }

// ChildrenRetry is the parent's outcome while some of its sub-handlers are
// not finished: the parent runs again after Delay (the earliest of its
// children's). Its message is "None", as Kopf stores it.
type ChildrenRetry struct{ Delay time.Duration }

func (e *ChildrenRetry) Error() string { return "None" }

// isPermanent reports errors that end the handler at once.
func isPermanent(err error) bool {
	var p *PermanentError
	var t *HandlerTimeoutError
	var r *HandlerRetriesError
	return errors.As(err, &p) || errors.As(err, &t) || errors.As(err, &r)
}
