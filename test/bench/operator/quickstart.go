package main

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"

	"github.com/kopf-go/kopf/handlers"

	"github.com/kopf-go/kopf/pkg/cause"
)

// runQuickStart runs the README's quick start with the benchmark's
// handlers: the kind by name (ForKind), handlers of unstructured objects,
// and the standalone runner with Kopf's command line, until ctx is done.
// The one addition is a login handler that gives the runner the counted
// connection; the runner logs to stderr, as it does for users.
//
// For the sharding benchmarks, the replica may be a member of a shard
// ring (--shard-ring, with its own --identity), its create handler may
// wait for simulated I/O (--handler-delay), and it may run a daemon for
// every object (--daemons), which shows where each object is handled.
func runQuickStart(ctx context.Context, cfg *rest.Config, c config, rec *recorder) error {
	reg := handlers.NewRegistry()
	kind := handlers.ForKind(reg, "kopf.dev", "v1", "KopfExample")
	handlers.OnCreate(kind, "create_fn", func(ctx context.Context, obj *unstructured.Unstructured, _ *cause.Change) (any, error) {
		if err := sleep(ctx, c.handlerDelay); err != nil {
			return nil, err
		}
		rec.changed("create", obj.GetName(), counterOf(obj))
		return map[string]any{"message": "created"}, nil
	})
	handlers.OnUpdate(kind, "update_fn", func(ctx context.Context, obj *unstructured.Unstructured, _ *cause.Change) (any, error) {
		rec.changed("update", obj.GetName(), counterOf(obj))
		return nil, nil
	})
	handlers.OnDelete(kind, "delete_fn", func(ctx context.Context, obj *unstructured.Unstructured, _ *cause.Change) (any, error) {
		rec.deleted()
		return nil, nil
	})
	if c.daemons {
		handlers.Daemon(kind, "daemon_fn", func(ctx context.Context, obj *unstructured.Unstructured, _ *cause.Daemon) (any, error) {
			rec.daemons.Add(1)
			defer rec.daemons.Add(-1)
			<-ctx.Done()
			return nil, nil
		})
	}
	handlers.OnLogin(reg, "login", func(ctx context.Context, _ *cause.Activity) (*rest.Config, error) {
		return cfg, nil
	})
	args := []string{"--standalone", "--namespace", c.namespace}
	if c.shardRing != "" {
		args = append(args, "--shard-ring", c.shardRing)
	}
	return handlers.Run(ctx, reg, args, handlers.RunOptions{Options: handlers.Options{MaxConcurrentReconciles: c.workers, Identity: c.identity,
		Sharding: handlers.Sharding{AssignerWorkers: c.assignerWorkers}}})
}

// sleep waits for d, or until ctx ends (an error then, so that the
// handler is tried again rather than recorded as done).
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// counterOf is the object's spec.counter, 0 if it has none.
func counterOf(obj *unstructured.Unstructured) int {
	counter, _, _ := unstructured.NestedInt64(obj.Object, "spec", "counter")
	return int(counter)
}
