// Command 04-events posts Kubernetes Events about the KopfExample it
// handles: one of a custom type, and one each of the conventional Normal,
// Warning and Error types.
package main

import (
	"context"
	"errors"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kopf-go/kopf/handlers"

	"github.com/kopf-go/kopf/pkg/cause"
)

func main() {
	reg := handlers.NewRegistry()
	kex := handlers.ForKind(reg, "kopf.dev", "v1", "KopfExample")
	handlers.OnCreate(kex, "create_fn", createFn)
	handlers.Main(reg, handlers.RunOptions{})
}

// createFn posts four Events about the object. Posting never blocks the
// handler and never fails it: the Events are queued and posted in the
// background.
func createFn(ctx context.Context, obj *unstructured.Unstructured, c *cause.Change) (any, error) {
	// Any type, as kopf.event.
	handlers.PostEvent(ctx, obj, "SomeType", "SomeReason", "Some message")

	// The conventional types, as kopf.info and kopf.warn.
	handlers.PostInfo(ctx, obj, "SomeReason", "Some message")
	handlers.PostWarning(ctx, obj, "SomeReason", "Some message")

	// An Error Event about an error, as kopf.exception; Go has no current
	// exception, so the error is passed.
	if err := failingWork(); err != nil {
		handlers.PostException(ctx, obj, "SomeReason", "Some exception:", err)
	}
	return nil, nil
}

// failingWork stands for some work that fails. Its message is a sentence,
// as Kopf's example has it, so that the Event reads the same.
func failingWork() error {
	return errors.New("Exception text.")
}
