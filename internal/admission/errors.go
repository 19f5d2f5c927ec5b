package admission

import (
	"errors"
	"fmt"

	"github.com/kopf-go/kopf/pkg/admission"

	"github.com/kopf-go/kopf/internal/contain"
	"github.com/kopf-go/kopf/internal/execution"
	"github.com/kopf-go/kopf/internal/metrics"
)

// DefaultCode is the status code of a denial that names none.
const DefaultCode = admission.DefaultCode

// Error denies an API request with a message and a status code (the
// public admission.Error).
type Error = admission.Error

// asError finds an Error (by value or by pointer) in err's chain.
func asError(err error) (Error, bool) {
	var byValue Error
	if errors.As(err, &byValue) {
		return byValue, true
	}
	var byPointer *Error
	if errors.As(err, &byPointer) && byPointer != nil {
		return *byPointer, true
	}
	return Error{}, false
}

// rank orders errors for the report, best first: admission errors, then
// permanent, then temporary errors, then anything else.
func rank(err error) int {
	if _, ok := asError(err); ok {
		return 0
	}
	var p *execution.PermanentError
	if errors.As(err, &p) {
		return 1
	}
	var t *execution.TemporaryError
	if errors.As(err, &t) {
		return 2
	}
	return rankArbitrary
}

// rankArbitrary is the rank of errors that are neither admission errors
// nor the handlers' typed errors.
const rankArbitrary = 9

// outcomeOf names what a handler's error did to the request, for the
// metrics: deliberate denials (the errors that rank above arbitrary ones)
// are told apart from failures, which point at a bug.
func outcomeOf(err error) string {
	switch {
	case err == nil:
		return metrics.WebhookAllowed
	case rank(err) < rankArbitrary:
		return metrics.WebhookDenied
	}
	return metrics.WebhookError
}

// bestError picks the error to report: the best ranked, the first of them
// in the handlers' order among equals; nil when there are none.
func bestError(errs []error) error {
	var best error
	for _, err := range errs {
		if err != nil && (best == nil || rank(err) < rank(best)) {
			best = err
		}
	}
	return best
}

// PanicMessage is what the API client learns of a handler that panicked:
// the panic's value and stack are for the operator's log only.
const PanicMessage = "Internal error in an admission handler (see the operator's log)."

// statusOf is the message and code reported for an error: the message, or
// the error's type when it has none, and the admission error's code or 500;
// a panic's message is PanicMessage.
func statusOf(err error) (string, int) {
	var panicked *contain.Panic
	if errors.As(err, &panicked) {
		return PanicMessage, DefaultCode
	}
	message := err.Error()
	if message == "" {
		message = fmt.Sprintf("%T", err)
	}
	code := DefaultCode
	if e, ok := asError(err); ok && e.Code != 0 {
		code = e.Code
	}
	return message, code
}
