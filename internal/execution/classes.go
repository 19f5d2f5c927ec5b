package execution

import "errors"

// Class names what became of one attempt, in the words of the metrics'
// outcome label: a closed set, so that the label's values are bounded.
type Class string

// The classes of outcomes.
const (
	// ClassSuccess: the handler returned without an error.
	ClassSuccess Class = "success"
	// ClassTemporaryError: the handler failed and is retried later (a
	// TemporaryError, or an arbitrary error in the temporary errors mode).
	ClassTemporaryError Class = "temporary_error"
	// ClassPermanentError: the handler failed for good (a PermanentError,
	// or an arbitrary error in the permanent errors mode).
	ClassPermanentError Class = "permanent_error"
	// ClassTimeout: the handler failed for good because of its timeout.
	ClassTimeout Class = "timeout"
	// ClassRetriesExceeded: the handler failed for good because its
	// retries are used up.
	ClassRetriesExceeded Class = "retries_exceeded"
	// ClassIgnoredError: the handler failed with an arbitrary error that
	// its errors mode ignores; it counts as done.
	ClassIgnoredError Class = "ignored_error"
	// ClassCancelled: the handler gave up because the operator or the
	// daemon is stopping; the attempt does not count. It is how a polite
	// daemon ends.
	ClassCancelled Class = "cancelled"
	// ClassSubhandlersPending: the handler returned, but some of its
	// sub-handlers are not finished, so it runs again.
	ClassSubhandlersPending Class = "subhandlers_pending"
)

// Classes are all the classes, in the order the documentation lists them.
var Classes = []Class{ClassSuccess, ClassTemporaryError, ClassPermanentError, ClassTimeout,
	ClassRetriesExceeded, ClassIgnoredError, ClassCancelled, ClassSubhandlersPending}

// Classify tells what became of an attempt from its outcome. It looks at
// errors only for failures, so a success costs nothing.
func Classify(o Outcome) Class {
	switch {
	case o.Cancelled:
		return ClassCancelled
	case o.Err == nil && o.Ignored:
		return ClassIgnoredError
	case o.Err == nil:
		return ClassSuccess
	}
	var timeout *HandlerTimeoutError
	var retries *HandlerRetriesError
	var children *ChildrenRetry
	switch {
	case errors.As(o.Err, &timeout):
		return ClassTimeout
	case errors.As(o.Err, &retries):
		return ClassRetriesExceeded
	case errors.As(o.Err, &children):
		return ClassSubhandlersPending
	case o.Final:
		return ClassPermanentError
	}
	return ClassTemporaryError
}
