package integration

import (
	"context"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kopf-go/kopf/handlers"

	"github.com/kopf-go/kopf/pkg/cause"
)

// One function registered several times, each with a Param of its own
// (Kopf's param=), is called once per registration with its own value:
// change handlers, daemons and on-event handlers alike.
func TestParamPerRegistration(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	reg, kind := kex()
	var mu sync.Mutex
	seen := map[string]any{}
	record := func(id string, param any) {
		mu.Lock()
		defer mu.Unlock()
		seen[id] = param
	}
	onCreate := func(_ context.Context, _ *unstructured.Unstructured, c *cause.Change) (any, error) {
		record(c.HandlerID, c.Param)
		return nil, nil
	}
	daemon := func(ctx context.Context, _ *unstructured.Unstructured, d *cause.Daemon) (any, error) {
		record(d.HandlerID, d.Param)
		<-ctx.Done()
		return nil, nil
	}
	for _, tier := range []string{"gold", "silver"} {
		handlers.OnCreate(kind, "create_"+tier, onCreate, handlers.Param(tier))
		handlers.Daemon(kind, "daemon_"+tier, daemon, handlers.Param(tier))
	}
	handlers.OnEvent(kind, "event", func(_ context.Context, _ *unstructured.Unstructured, e *cause.Event) (any, error) {
		record(e.HandlerID, e.Param)
		return nil, nil
	}, handlers.Param(42))
	env.StartOperator(t, ns, reg, handlers.Options{Standalone: true})
	create(t, exampleObject(t, ns))
	want := map[string]any{"create_gold": "gold", "create_silver": "silver", "daemon_gold": "gold", "daemon_silver": "silver", "event": 42}
	eventually(t, "every registration is called with its param", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) == len(want)
	})
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff(want, seen); diff != "" {
		t.Errorf("params -want +got:\n%s", diff)
	}
}
