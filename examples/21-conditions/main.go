// Command 21-conditions keeps status.conditions (Ready, Reconciling,
// Stalled) and status.observedGeneration of KopfExample objects from
// their handlers' progress, so that `kubectl wait --for=condition=Ready`
// and kstatus tell when an object is handled. What the handlers do
// depends on spec.field: "flaky" fails temporarily twice, then succeeds;
// "broken" fails for good; anything else succeeds at once.
package main

import (
	"context"
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kopf-go/kopf/handlers"

	"github.com/kopf-go/kopf/pkg/cause"
)

// flakyDelay is how long a flaky handler asks to wait before its retry.
const flakyDelay = 2 * time.Second

func main() {
	reg := handlers.NewRegistry()
	kex := handlers.ForKind(reg, "kopf.dev", "v1", "KopfExample")
	handlers.Conditions(kex)
	handlers.OnCreate(kex, "create_fn", handle)
	handlers.OnUpdate(kex, "update_fn", handle, handlers.Field("spec.field"))
	handlers.Main(reg, handlers.RunOptions{})
}

// handle does what spec.field says, and returns the field it handled as
// its result (status.<id>).
func handle(ctx context.Context, obj *unstructured.Unstructured, c *cause.Change) (any, error) {
	field, _, _ := unstructured.NestedString(obj.Object, "spec", "field")
	switch {
	case field == "broken":
		return nil, handlers.Permanent(errors.New("the field is broken"))
	case field == "flaky" && c.Retry < 2:
		return nil, handlers.Temporary(errors.New("the field is flaky, not yet"), flakyDelay)
	}
	return map[string]any{"handled": field}, nil
}
