// Command 14-daemons runs two daemons per KopfExample object: one that
// watches its stop signal and exits politely, and one that ignores it and
// waits to have its context cancelled. Both fail on their first three
// attempts to show that temporary errors restart a daemon.
package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kopf-go/kopf/handlers"

	"github.com/kopf-go/kopf/pkg/cause"
	"github.com/kopf-go/kopf/pkg/filter"
)

func main() {
	reg := handlers.NewRegistry()
	kex := handlers.ForKind(reg, "kopf.dev", "v1", "KopfExample")
	handlers.Daemon(kex, "background_sync", backgroundSync, handlers.Backoff(3*time.Second))
	handlers.Daemon(kex, "background_async", backgroundAsync,
		handlers.Backoff(3*time.Second),
		handlers.CancellationBackoff(time.Second),
		handlers.CancellationTimeout(500*time.Millisecond),
		handlers.Annotations{"someannotation": filter.Equals("somevalue")})
	handlers.Main(reg, handlers.RunOptions{})
}

// backgroundSync is the polite daemon: it sleeps with d.Sleep, which
// wakes as soon as the daemon is asked to stop, and then finishes its
// work instead of being cut short. Unless stopped, it runs for about 30
// seconds after three failed attempts and is not started again for the
// object.
func backgroundSync(ctx context.Context, obj *unstructured.Unstructured, d *cause.Daemon) (any, error) {
	log := logr.FromContextOrDiscard(ctx)
	if d.Retry < 3 {
		d.Patch.SetStatus("message", fmt.Sprintf("Failed %d times.", d.Retry+1))
		return nil, handlers.Temporary(errors.New("Simulated failure."), time.Second)
	}

	started := time.Now()
	for time.Since(started) <= 30*time.Second {
		log.Info(fmt.Sprintf("=> Ping from a sync daemon: field=%s, retry=%d", field(ctx, obj, d), d.Retry))
		if !d.Sleep(ctx, 5*time.Second) {
			break // asked to stop
		}
	}

	d.Patch.SetStatus("message", "Accompanying is finished.")
	return nil, nil
}

// backgroundAsync is the stubborn daemon: it ignores d.Stopped and runs
// until its context is cancelled, one second (the cancellation backoff)
// after the stop signal. Were it to ignore the cancellation too, it would
// be abandoned half a second later (the cancellation timeout), so that the
// object's deletion does not wait for it any longer.
func backgroundAsync(ctx context.Context, obj *unstructured.Unstructured, d *cause.Daemon) (any, error) {
	log := logr.FromContextOrDiscard(ctx)
	if d.Retry < 3 {
		return nil, handlers.Temporary(errors.New("Simulated failure."), time.Second)
	}

	for {
		log.Info(fmt.Sprintf("=> Ping from an async daemon: field=%s", field(ctx, obj, d)))
		select {
		case <-time.After(5 * time.Second):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// field returns spec.field of the object as it is now, quoted: a daemon
// runs for long, and the object it was called with grows stale. It falls
// back to that object if the latest one cannot be read (e.g. it is gone).
func field(ctx context.Context, obj *unstructured.Unstructured, d *cause.Daemon) string {
	if latest, err := d.Latest(ctx); err == nil {
		obj = latest.(*unstructured.Unstructured)
	}
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
