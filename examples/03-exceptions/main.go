// Command 03-exceptions shows how a handler's errors decide its fate: a
// permanent error fails it at once, a temporary error retries it after
// its delay, and an arbitrary error retries it after the backoff within
// its retries, or fails it at once with ErrorsPermanent.
package main

import (
	"context"
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kopf-go/kopf/handlers"

	"github.com/kopf-go/kopf/pkg/cause"
	"github.com/kopf-go/kopf/pkg/failure"
)

// errRecoverable is an arbitrary error: neither temporary nor permanent,
// so the handler's errors mode decides what it means.
var errRecoverable = errors.New("An error that is supposed to be recoverable.")

func main() {
	reg := handlers.NewRegistry()
	kex := handlers.ForKind(reg, "kopf.dev", "v1", "KopfExample")
	handlers.OnCreate(kex, "instant_failure_with_only_a_message", instantFailureWithOnlyAMessage)
	handlers.OnCreate(kex, "eventual_success_with_a_few_messages", eventualSuccessWithAFewMessages)
	handlers.OnCreate(kex, "eventual_failure_with_tracebacks", failWithRecoverable,
		handlers.Retries(3), handlers.Backoff(time.Second))
	handlers.OnCreate(kex, "instant_failure_with_traceback", failWithRecoverable,
		handlers.Errors(failure.ErrorsPermanent), handlers.Backoff(time.Second))
	handlers.Main(reg, handlers.RunOptions{})
}

// instantFailureWithOnlyAMessage fails for good on its first attempt.
func instantFailureWithOnlyAMessage(ctx context.Context, obj *unstructured.Unstructured, c *cause.Change) (any, error) {
	return nil, handlers.Permanent(errors.New("Fail once and for all."))
}

// eventualSuccessWithAFewMessages asks to be retried in a second on its
// first three attempts (retries 0, 1 and 2) and succeeds on the fourth.
func eventualSuccessWithAFewMessages(ctx context.Context, obj *unstructured.Unstructured, c *cause.Change) (any, error) {
	if c.Retry < 3 {
		return nil, handlers.Temporary(errors.New("Expected recoverable error."), time.Second)
	}
	return nil, nil
}

// failWithRecoverable always returns an arbitrary error; the options it
// is registered with decide whether it is retried.
func failWithRecoverable(ctx context.Context, obj *unstructured.Unstructured, c *cause.Change) (any, error) {
	return nil, errRecoverable
}
