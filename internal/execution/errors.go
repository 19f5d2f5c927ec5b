// Package execution runs handlers once per attempt and interprets what they
// return: success, temporary and permanent errors, the retry and timeout
// limits, and the per-handler state those outcomes lead to.
package execution

import (
	"errors"
	"time"
)

// ErrorsMode says what an arbitrary error (neither TemporaryError nor
// PermanentError) returned by a handler means.
type ErrorsMode int

// The modes, as Kopf's ErrorsMode. The zero value picks the handler kind's
// default: Temporary for change handlers.
const (
	ErrorsDefault ErrorsMode = iota
	ErrorsTemporary
	ErrorsPermanent
	ErrorsIgnored
)

func (m ErrorsMode) String() string {
	switch m {
	case ErrorsTemporary:
		return "temporary"
	case ErrorsPermanent:
		return "permanent"
	case ErrorsIgnored:
		return "ignored"
	}
	return "default"
}

// DefaultTemporaryDelay is Kopf's default delay of a TemporaryError.
const DefaultTemporaryDelay = 60 * time.Second

// TemporaryError asks for the handler to be called again after Delay (zero:
// at once), within its retries and timeout.
type TemporaryError struct {
	Err   error
	Delay time.Duration
}

// NewTemporaryError returns a TemporaryError with a message and a delay.
func NewTemporaryError(message string, delay time.Duration) *TemporaryError {
	return &TemporaryError{Err: errors.New(message), Delay: delay}
}

// Temporary wraps an error so that the handler is retried after the delay.
func Temporary(err error, delay time.Duration) error { return &TemporaryError{Err: err, Delay: delay} }

func (e *TemporaryError) Error() string { return errText(e.Err) }
func (e *TemporaryError) Unwrap() error { return e.Err }

// PermanentError stops the handler for this cause: it is not retried until
// the object's essence changes again.
type PermanentError struct {
	Err error
}

// NewPermanentError returns a PermanentError with a message.
func NewPermanentError(message string) *PermanentError {
	return &PermanentError{Err: errors.New(message)}
}

// Permanent wraps an error so that the handler is not retried.
func Permanent(err error) error { return &PermanentError{Err: err} }

func (e *PermanentError) Error() string { return errText(e.Err) }
func (e *PermanentError) Unwrap() error { return e.Err }

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

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// isPermanent reports errors that end the handler at once.
func isPermanent(err error) bool {
	var p *PermanentError
	var t *HandlerTimeoutError
	var r *HandlerRetriesError
	return errors.As(err, &p) || errors.As(err, &t) || errors.As(err, &r)
}
