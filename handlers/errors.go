package handlers

import (
	"time"

	"github.com/kopf-go/kopf/internal/execution"
)

// Temporary wraps err so that the handler is retried after delay (zero:
// at once), within its retries and timeout, as Kopf's TemporaryError: the
// error is a *failure.TemporaryError. errors.New makes one from a message:
//
//	return nil, handlers.Temporary(errors.New("the database is not ready"), 10*time.Second)
func Temporary(err error, delay time.Duration) error { return execution.Temporary(err, delay) }

// Permanent wraps err so that the handler is not retried for this cause,
// as Kopf's PermanentError: the error is a *failure.PermanentError.
func Permanent(err error) error { return execution.Permanent(err) }
