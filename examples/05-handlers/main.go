// Command 05-handlers registers several handlers for each cause, to show
// that they run one after another in the order of registration, and a
// handler of one field that runs only when that field changes.
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
	handlers.OnResume(kex, "resume_fn_1", printing("RESUMED 1st"))
	handlers.OnCreate(kex, "create_fn_1", printing("CREATED 1st"))
	handlers.OnResume(kex, "resume_fn_2", printing("RESUMED 2nd"))
	handlers.OnCreate(kex, "create_fn_2", printing("CREATED 2nd"))
	handlers.OnUpdate(kex, "update_fn", updateFn)
	handlers.OnDelete(kex, "delete_fn_1", printing("DELETED 1st"))
	handlers.OnDelete(kex, "delete_fn_2", printing("DELETED 2nd"))
	handlers.OnField(kex, "field_fn", "spec.field", fieldFn)
	handlers.Main(reg, handlers.RunOptions{})
}

// printing returns a handler that prints one line and succeeds.
func printing(line string) handlers.ChangeFunc[*unstructured.Unstructured] {
	return func(ctx context.Context, obj *unstructured.Unstructured, c *cause.Change) (any, error) {
		fmt.Println(line)
		return nil, nil
	}
}

// updateFn sees the old and new essence and their diff in c.Old, c.New
// and c.Diff.
func updateFn(ctx context.Context, obj *unstructured.Unstructured, c *cause.Change) (any, error) {
	fmt.Println("UPDATED")
	return nil, nil
}

// fieldFn sees only spec.field: c.Old and c.New are its values (nil when
// absent, as on creation).
func fieldFn(ctx context.Context, obj *unstructured.Unstructured, c *cause.Change) (any, error) {
	fmt.Printf("FIELD CHANGED: %v -> %v\n", c.Old, c.New)
	return nil, nil
}
