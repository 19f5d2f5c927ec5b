package reactor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"

	"github.com/kopf-go/kopf/internal/causes"
	"github.com/kopf-go/kopf/internal/clients"
	"github.com/kopf-go/kopf/internal/execution"
	"github.com/kopf-go/kopf/internal/posting"
	"github.com/kopf-go/kopf/internal/registry"
)

// ErrActivityFailed is what a failed activity (a startup handler, say)
// amounts to, as Kopf's ActivityError.
var ErrActivityFailed = errors.New("one or more handlers failed")

// RunActivities runs operator-wide handlers until all are finished, all
// at once, retrying in memory as their errors ask; it returns their results
// by id, and ErrActivityFailed if any of them failed for good.
func RunActivities(ctx context.Context, log logr.Logger, handlers []*registry.ActivityHandler, s Settings) (map[string]any, error) {
	if !s.resolved {
		return nil, errUnresolved
	}
	states := map[string]*execution.HandlerState{}
	results := map[string]any{}
	start := s.Clock.Now()
	for _, h := range handlers {
		states[h.ID] = &execution.HandlerState{Active: true, Started: start}
	}
	hctx := clients.WithClient(posting.NewContext(logr.NewContext(ctx, log), s.Poster), s.Client)
	for {
		now := s.Clock.Now()
		for _, h := range handlers {
			st := states[h.ID]
			if !st.Awake(now) {
				continue
			}
			a := &causes.Activity{HandlerID: h.ID, Param: h.Param, Retry: st.Retries, Started: st.Started, Runtime: st.Runtime(now),
				Memo: s.Memo, Indices: s.Indices}
			outcome := execution.Execute(hctx, &h.Handler, st, now, s.defaults(), func(ctx context.Context) (any, error) {
				return h.Fn(ctx, a)
			})
			countActivityPanic(h, outcome)
			if outcome.Cancelled {
				return results, ctx.Err()
			}
			states[h.ID] = st.WithOutcome(outcome, s.Clock.Now())
			if outcome.Err == nil {
				results[h.ID] = outcome.Result
			}
		}
		state := &execution.State{Handlers: states}
		delay, pending := state.Delay(s.Clock.Now())
		if !pending {
			for _, st := range states {
				if st.Failure {
					return results, ErrActivityFailed
				}
			}
			return results, nil
		}
		t := s.Clock.NewTimer(max(delay, 0))
		select {
		case <-ctx.Done():
			t.Stop()
			return results, ctx.Err()
		case <-t.C():
		}
	}
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

// probeTimeout bounds one round of probes (on the engine's clock), however
// long its callers would wait.
const probeTimeout = 10 * time.Second
