// Command 07-subhandlers registers one sub-handler per item of the
// KopfExample's spec.items, so that the framework tracks each item's
// progress, retries and result on its own.
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

// createFn registers a sub-handler with the id of each item: create_fn/item1,
// create_fn/item2, and so on. The framework calls createFn again on every
// cycle until all of them are done, so it registers the same ones each
// time; the finished ones are not run again.
func createFn(ctx context.Context, obj *unstructured.Unstructured, c *cause.Change) (any, error) {
	items, _, err := unstructured.NestedStringSlice(obj.Object, "spec", "items")
	if err != nil {
		return nil, handlers.Permanent(fmt.Errorf("read spec.items: %w", err))
	}
	for _, item := range items {
		if err := handlers.Subhandler(ctx, item, createItemFn(item)); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

// createItemFn returns the sub-handler of one item. Its result lands in
// status."create_fn/<item>".
func createItemFn(item string) handlers.ChangeFunc[*unstructured.Unstructured] {
	return func(ctx context.Context, obj *unstructured.Unstructured, c *cause.Change) (any, error) {
		fmt.Printf("=== Handling creation for %s. ===\n", item)
		return map[string]any{"item": item}, nil
	}
}
