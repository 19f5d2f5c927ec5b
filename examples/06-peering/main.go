// Command 06-peering shows peering: operators that serve the same objects
// see each other through a peering object and give way by priority. Its one
// handler does nothing; what matters is which copy of the operator is
// allowed to run it (see the README).
package main

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kopf-go/kopf/handlers"

	"github.com/kopf-go/kopf/pkg/cause"
)

func main() {
	reg := handlers.NewRegistry()
	kex := handlers.ForKind(reg, "kopf.dev", "v1", "KopfExample")
	handlers.OnCreate(kex, "create_fn", createFn)
	// Peering needs no options: it is on whenever the peering CRDs are in
	// the cluster. --priority, --dev, --peering and --standalone on the
	// command line say how this copy takes part.
	handlers.Main(reg, handlers.RunOptions{})
}

// createFn runs once per new object, in whichever operator is not paused.
func createFn(ctx context.Context, obj *unstructured.Unstructured, c *cause.Change) (any, error) {
	return nil, nil
}
