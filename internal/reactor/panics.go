package reactor

import (
	"fmt"

	"github.com/go-logr/logr"

	"github.com/kopf-go/kopf/internal/contain"
	"github.com/kopf-go/kopf/internal/execution"
	"github.com/kopf-go/kopf/internal/metrics"
	"github.com/kopf-go/kopf/internal/registry"
)

// The engine contains every callback of the operator's (docs/handlers.md,
// "When a callback panics"): handlers' functions panic inside
// execution.Execute, which logs the panic with its stack and gives it in
// the outcome, and the engine counts it here; filters panic inside the
// registry's matching, which tells filterPanicked; the storages and the
// client's wrapper are guarded where the engine holds them (storages.go,
// guardedclient.go).

// filterPanicked is the hook of a kind's subjects (registry.Subject's
// FilterPanicked): the handler does not match, which the log says with
// the panic's stack, and the metrics count.
func (r *kindState) filterPanicked(log logr.Logger) func(h *execution.Handler, p *contain.Panic) {
	return func(h *execution.Handler, p *contain.Panic) {
		log.Error(p, fmt.Sprintf("%s does not match: its filter panicked: %s", h, p), "handler", h.ID, "stack", string(p.Stack))
		metrics.CallbackPanicked(r.kindLabel, metrics.CallbackFilter, h.ID)
	}
}

// countPanic counts the attempt's panic, if it panicked, as the kind's
// callback of that kind (metrics.Callback...).
func countPanic(kind, callback, handler string, o execution.Outcome) {
	if o.Panic != nil {
		metrics.CallbackPanicked(kind, callback, handler)
	}
}

// activityCallbacks name the operator-wide handlers in the metrics.
var activityCallbacks = map[registry.ActivityKind]string{
	registry.ActivityStartup: metrics.CallbackStartup,
	registry.ActivityCleanup: metrics.CallbackCleanup,
	registry.ActivityLogin:   metrics.CallbackLogin,
	registry.ActivityProbe:   metrics.CallbackProbe,
}

// countActivityPanic counts an operator-wide handler's panic: these have
// no kind.
func countActivityPanic(h *registry.ActivityHandler, o execution.Outcome) {
	countPanic("", activityCallbacks[h.Kind], h.ID, o)
}
