package engine

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"

	"github.com/kopf-go/kopf/internal/activities"
	"github.com/kopf-go/kopf/internal/registry"
	"github.com/kopf-go/kopf/internal/tracing"
)

// RunActivities runs operator-wide handlers until all are finished
// (activities.Run), with the engine's resolved settings.
func RunActivities(ctx context.Context, log logr.Logger, handlers []*registry.ActivityHandler, s Settings) (map[string]any, error) {
	if !s.resolved {
		return nil, errUnresolved
	}
	return activities.Run(tracing.WithTracer(ctx, s.Tracer), log, handlers, s.activities())
}

// activities are the settings of operator-wide handlers.
func (s Settings) activities() activities.Settings {
	return activities.Settings{Clock: s.Clock, Poster: s.Poster, Client: s.Client, Reader: s.Reader, Memo: s.Memo, Indices: s.Indices, Defaults: s.defaults()}
}

// startup runs the startup handlers before anything is watched; a failure
// stops the operator before it handles anything.
func (e *engine) startup(ctx context.Context) error {
	handlers := e.activities(registry.ActivityStartup)
	if len(handlers) == 0 {
		return nil
	}
	if _, err := RunActivities(ctx, e.log, handlers, e.settings); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("the startup handlers failed: %w", err)
	}
	return nil
}

// cleanup runs the cleanup handlers when the operator stops, after its
// handlers have stopped; the stop waits for them (up to its grace).
func (e *engine) cleanup(ctx context.Context) {
	handlers := e.activities(registry.ActivityCleanup)
	if len(handlers) == 0 {
		return
	}
	done := e.sup.Track("the cleanup handlers")
	defer done()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.settings.Daemons.ShutdownGrace)
	defer cancel()
	if _, err := RunActivities(ctx, e.log, handlers, e.settings); err != nil {
		e.log.Error(err, "The cleanup handlers failed.")
	}
}

func (e *engine) activities(kind registry.ActivityKind) []*registry.ActivityHandler {
	return e.reg.ActivitiesOf(kind)
}
