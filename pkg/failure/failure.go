// Package failure holds the errors by which a handler says how it failed,
// as Kopf's: a TemporaryError is retried after its delay, a PermanentError
// ends the handler for this cause; and ErrorsMode, what any other error
// means (handlers.Errors). handlers.Temporary and handlers.Permanent make
// them; errors.As finds them in a chain.
package failure

import "time"

// ErrorsMode says what an arbitrary error (neither TemporaryError nor
// PermanentError) returned by a handler means.
type ErrorsMode int

// The modes, as Kopf's ErrorsMode. The zero value picks the handler kind's
// default: ErrorsTemporary for change handlers.
const (
	ErrorsDefault ErrorsMode = iota
	// ErrorsTemporary retries after the backoff.
	ErrorsTemporary
	// ErrorsPermanent fails the handler at once.
	ErrorsPermanent
	// ErrorsIgnored logs the error and counts the handler as succeeded.
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

func (e *TemporaryError) Error() string { return errText(e.Err) }
func (e *TemporaryError) Unwrap() error { return e.Err }

// PermanentError stops the handler for this cause: it is not retried until
// the object's essence changes again.
type PermanentError struct {
	Err error
}

func (e *PermanentError) Error() string { return errText(e.Err) }
func (e *PermanentError) Unwrap() error { return e.Err }

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
