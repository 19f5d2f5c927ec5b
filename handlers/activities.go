package handlers

import (
	"context"
	"fmt"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/kopf-go/kopf/internal/causes"
	"github.com/kopf-go/kopf/internal/engine"
	"github.com/kopf-go/kopf/internal/execution"
	"github.com/kopf-go/kopf/internal/registry"
	"github.com/kopf-go/kopf/pkg/cause"
)

// OnStartup registers a handler that runs when the operator starts, before
// any object is watched, retried until it succeeds (errors are temporary
// by default, as for change handlers). If one fails for good, the operator
// stops without handling anything. Startup handlers may fill the
// operator's memo, which every object's memo starts from.
//
// Operator-wide handlers (startup, cleanup, login, probe) get a
// cause.Activity: their retry count and timing, the operator's memo and
// the indices. They take the limits as options (Retries, Backoff, Timeout,
// Errors).
func OnStartup(r *Registry, id string, fn func(ctx context.Context, a *cause.Activity) error, opts ...LimitOption) {
	addActivity(r, id, registry.ActivityStartup, func(ctx context.Context, a *causes.Activity) (any, error) {
		return nil, fn(ctx, a)
	}, opts)
}

// OnCleanup registers a handler that runs when the operator stops, after
// its handlers and daemons have stopped.
func OnCleanup(r *Registry, id string, fn func(ctx context.Context, a *cause.Activity) error, opts ...LimitOption) {
	addActivity(r, id, registry.ActivityCleanup, func(ctx context.Context, a *causes.Activity) (any, error) {
		return nil, fn(ctx, a)
	}, opts)
}

// OnLogin registers a handler that gives the standalone runner (Main,
// Run) its connection to the cluster, retried until one succeeds; the
// first login handler (in registration order) that returns a configuration
// wins. Without login handlers, the runner uses --kubeconfig, then
// $KUBECONFIG, ~/.kube/config and the in-cluster configuration. Operators
// embedded in a manager use the manager's connection.
func OnLogin(r *Registry, id string, fn func(ctx context.Context, a *cause.Activity) (*rest.Config, error), opts ...LimitOption) {
	addActivity(r, id, registry.ActivityLogin, func(ctx context.Context, a *causes.Activity) (any, error) {
		cfg, err := fn(ctx, a)
		if err == nil && cfg == nil {
			return nil, fmt.Errorf("login handler '%s' returned no configuration", id)
		}
		return cfg, err
	}, opts)
}

// OnProbe registers a liveness probe: its result is part of the JSON that
// the runner's --liveness endpoint serves ({"id": result}), and its error
// fails the manager's liveness check (/healthz/kopf-peering). Probes run at
// most every ten seconds; in between, the last results are served.
func OnProbe(r *Registry, id string, fn func(ctx context.Context, a *cause.Activity) (any, error), opts ...LimitOption) {
	addActivity(r, id, registry.ActivityProbe, fn, opts)
}

func addActivity(r *Registry, id string, kind registry.ActivityKind, fn registry.ActivityFunc, opts []LimitOption) {
	h := &registry.ActivityHandler{Kind: kind, Fn: fn}
	h.ID, h.Title = id, "Activity"
	applyAll(target{handler: &h.Handler}, opts)
	r.reg.AddActivity(h)
}

// login runs the registry's login handlers; nil without any.
func (r *Registry) login(ctx context.Context, s engine.Settings) (*rest.Config, error) {
	handlers := r.reg.ActivitiesOf(registry.ActivityLogin)
	if len(handlers) == 0 {
		return nil, nil
	}
	results, err := engine.RunActivities(ctx, ctrl.Log.WithName("login"), handlers, s)
	for _, h := range handlers {
		if cfg, ok := results[h.ID].(*rest.Config); ok && cfg != nil {
			return cfg, nil
		}
	}
	if err == nil {
		err = execution.NewPermanentError("no login handler gave a configuration")
	}
	return nil, fmt.Errorf("log in: %w", err)
}
