// Command 01-minimal is the smallest operator: one create handler for
// KopfExample objects that prints the spec and returns a message, which
// the framework stores in status.create_fn.
package main

import (
	"context"
	"fmt"

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

// createFn runs once per new object; its result becomes the object's
// status.create_fn.
func createFn(ctx context.Context, obj *unstructured.Unstructured, c *cause.Change) (any, error) {
	fmt.Printf("And here we are! Creating: %v\n", c.Spec())
	return map[string]any{"message": "hello world"}, nil
}
