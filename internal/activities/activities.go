// Package activities runs the operator-wide handlers: startup, cleanup
// and login handlers until they are finished (Run), and the probe
// handlers' rounds behind the liveness endpoint (Prober).
package activities

import (
	"context"
	"errors"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/internal/causes"
	"github.com/kopf-go/kopf/internal/clients"
	"github.com/kopf-go/kopf/internal/execution"
	"github.com/kopf-go/kopf/internal/metrics"
	"github.com/kopf-go/kopf/internal/posting"
	"github.com/kopf-go/kopf/internal/registry"
	"github.com/kopf-go/kopf/pkg/indexing"
	"github.com/kopf-go/kopf/pkg/memo"
)

// ErrActivityFailed is what a failed activity (a startup handler, say)
// amounts to, as Kopf's ActivityError.
var ErrActivityFailed = errors.New("one or more handlers failed")

// Settings are what the operator-wide handlers run with: the engine's,
// resolved.
type Settings struct {
	Clock clock.WithTicker
	// Poster posts the handlers' Events; Client and Reader are what they
	// find in their context (clients.From, clients.ReaderFrom).
	Poster *posting.Poster
	Client client.Client
	Reader client.Reader
	// Memo and Indices are the operator's.
	Memo    *memo.Memo
	Indices *indexing.Indices
	// Defaults are the handlers' execution defaults.
	Defaults execution.Defaults
}

// Run runs operator-wide handlers until all are finished, all
// at once, retrying in memory as their errors ask; it returns their results
// by id, and ErrActivityFailed if any of them failed for good.
func Run(ctx context.Context, log logr.Logger, handlers []*registry.ActivityHandler, s Settings) (map[string]any, error) {
	states := map[string]*execution.HandlerState{}
	results := map[string]any{}
	start := s.Clock.Now()
	for _, h := range handlers {
		states[h.ID] = &execution.HandlerState{Active: true, Started: start}
	}
	hctx := clients.ForHandlers(posting.NewContext(logr.NewContext(ctx, log), s.Poster), s.Client, s.Reader)
	for {
		now := s.Clock.Now()
		for _, h := range handlers {
			st := states[h.ID]
			if !st.Awake(now) {
				continue
			}
			a := &causes.Activity{HandlerID: h.ID, Param: h.Param, Retry: st.Retries, Started: st.Started, Runtime: st.Runtime(now),
				Memo: s.Memo, Indices: s.Indices}
			outcome := execution.Execute(hctx, &h.Handler, st, now, s.Defaults, func(ctx context.Context) (any, error) {
				return h.Fn(ctx, a)
			})
			countPanic(h, outcome)
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

// callbacks name the operator-wide handlers in the metrics.
var callbacks = map[registry.ActivityKind]string{
	registry.ActivityStartup: metrics.CallbackStartup,
	registry.ActivityCleanup: metrics.CallbackCleanup,
	registry.ActivityLogin:   metrics.CallbackLogin,
	registry.ActivityProbe:   metrics.CallbackProbe,
}

// countPanic counts an operator-wide handler's panic, if it panicked:
// these have no kind.
func countPanic(h *registry.ActivityHandler, o execution.Outcome) {
	if o.Panic != nil {
		metrics.CallbackPanicked("", callbacks[h.Kind], h.ID)
	}
}
