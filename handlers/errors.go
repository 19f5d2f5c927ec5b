package handlers

import (
	"time"

	"github.com/kopf-go/kopf/internal/execution"
)

// TemporaryError asks for the handler to be retried after Delay (zero: at
// once), within its retries and timeout. Kopf's default delay is 60 s.
type TemporaryError = execution.TemporaryError

// PermanentError ends the handler for this cause without retries.
type PermanentError = execution.PermanentError

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
	ErrorsTemporary ErrorsMode = execution.ErrorsTemporary
	// ErrorsPermanent fails the handler at once.
	ErrorsPermanent ErrorsMode = execution.ErrorsPermanent
	// ErrorsIgnored logs the error and counts the handler as succeeded.
	ErrorsIgnored ErrorsMode = execution.ErrorsIgnored
)
