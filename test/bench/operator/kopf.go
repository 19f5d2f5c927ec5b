package main

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/kopf-go/kopf/handlers"
	"github.com/kopf-go/kopf/test/bench/internal/kex"

	"github.com/kopf-go/kopf/pkg/cause"
)

// setupKopf adds kopf-go's engine for the typed kind to the manager, as an
// operator embedded beside other controllers is set up: a create handler
// with a small result, an update handler, a delete handler, and with
// --daemons a daemon that runs until its object goes.
func setupKopf(mgr manager.Manager, c config, rec *recorder) error {
	reg := handlers.NewRegistry()
	kind := handlers.For[*kex.KopfExample](reg)
	handlers.OnCreate(kind, "create_fn", func(ctx context.Context, obj *kex.KopfExample, _ *cause.Change) (any, error) {
		rec.changed("create", obj.Name, obj.Spec.Counter)
		return map[string]any{"message": "created"}, nil
	})
	handlers.OnUpdate(kind, "update_fn", func(ctx context.Context, obj *kex.KopfExample, _ *cause.Change) (any, error) {
		rec.changed("update", obj.Name, obj.Spec.Counter)
		return nil, nil
	})
	handlers.OnDelete(kind, "delete_fn", func(ctx context.Context, obj *kex.KopfExample, _ *cause.Change) (any, error) {
		rec.deleted()
		return nil, nil
	})
	if c.daemons {
		handlers.Daemon(kind, "daemon_fn", func(ctx context.Context, obj *kex.KopfExample, _ *cause.Daemon) (any, error) {
			rec.daemons.Add(1)
			defer rec.daemons.Add(-1)
			<-ctx.Done()
			return nil, nil
		})
	}
	return handlers.SetupWithManager(mgr, reg, handlers.Options{
		Standalone:              true,
		Namespaces:              []string{c.namespace},
		MaxConcurrentReconciles: c.workers,
	})
}
