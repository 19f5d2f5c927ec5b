// Command 15-timers runs two timers per KopfExample object. Each waits
// until the object has not changed for a while (idle), and then calls its
// function on an interval for as long as the object exists.
package main

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kopf-go/kopf/handlers"

	"github.com/kopf-go/kopf/pkg/cause"
)

func main() {
	reg := handlers.NewRegistry()
	kex := handlers.ForKind(reg, "kopf.dev", "v1", "KopfExample")
	handlers.Timer(kex, "every_few_seconds_sync", pinging("Ping from a sync timer"),
		handlers.Idle(5*time.Second), handlers.Interval(2*time.Second))
	handlers.Timer(kex, "every_few_seconds_async", pinging("Ping from an async timer"),
		handlers.Idle(10*time.Second), handlers.Interval(4*time.Second))
	handlers.Main(reg, handlers.RunOptions{})
}

// pinging returns a timer that logs the message with the object's
// spec.field. Go has no sync/async split: both timers are the same kind
// of function, and the names only mirror Kopf's example.
func pinging(message string) handlers.DaemonFunc[*unstructured.Unstructured] {
	return func(ctx context.Context, obj *unstructured.Unstructured, d *cause.Daemon) (any, error) {
		log := logr.FromContextOrDiscard(ctx)
		log.Info(fmt.Sprintf("%s: field=%s", message, quoted(obj)))
		return nil, nil
	}
}

// quoted returns spec.field of the object, quoted if it is a string.
func quoted(obj *unstructured.Unstructured) string {
	value, found, _ := unstructured.NestedFieldNoCopy(obj.Object, "spec", "field")
	switch v := value.(type) {
	case string:
		return fmt.Sprintf("%q", v)
	case nil:
		if !found {
			return "<absent>"
		}
		return "null"
	default:
		return fmt.Sprint(v)
	}
}
