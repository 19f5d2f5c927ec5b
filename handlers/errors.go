package handlers

import (
	"time"

	"github.com/kopf-go/kopf/internal/execution"
)

// TemporaryError asks for the handler to be retried after Delay (zero: at
// once), within its retries and timeout.
type TemporaryError = execution.TemporaryError

// PermanentError ends the handler for this cause without retries.
type PermanentError = execution.PermanentError

// HandlerTimeoutError is the framework's failure of a handler whose
// timeout has passed.
type HandlerTimeoutError = execution.HandlerTimeoutError

// HandlerRetriesError is the framework's failure of a handler whose
// retries are used up.
type HandlerRetriesError = execution.HandlerRetriesError

// DefaultTemporaryDelay is Kopf's default delay of a temporary error.
const DefaultTemporaryDelay = execution.DefaultTemporaryDelay

// NewTemporaryError returns a temporary error with a message and a delay.
func NewTemporaryError(message string, delay time.Duration) *TemporaryError {
	return execution.NewTemporaryError(message, delay)
}

// Temporary wraps err so that the handler is retried after delay.
func Temporary(err error, delay time.Duration) error { return execution.Temporary(err, delay) }

// NewPermanentError returns a permanent error with a message.
func NewPermanentError(message string) *PermanentError { return execution.NewPermanentError(message) }

// Permanent wraps err so that the handler is not retried.
func Permanent(err error) error { return execution.Permanent(err) }

// ErrorsMode says what an arbitrary error (neither temporary nor
// permanent) means for a handler.
type ErrorsMode = execution.ErrorsMode

// The errors modes. Change handlers default to ErrorsTemporary.
const (
	// ErrorsTemporary retries after the backoff.
	ErrorsTemporary = execution.ErrorsTemporary
	// ErrorsPermanent fails the handler at once.
	ErrorsPermanent = execution.ErrorsPermanent
	// ErrorsIgnored logs the error and counts the handler as succeeded.
	ErrorsIgnored = execution.ErrorsIgnored
)
