package engine

import (
	"github.com/kopf-go/kopf/internal/execution"
	"github.com/kopf-go/kopf/internal/metrics"
)

// The engine contains every callback of the operator's (docs/handlers.md,
// "When a callback panics"): handlers' functions panic inside
// execution.Execute, which logs the panic with its stack and gives it in
// the outcome, and the engine counts it here; filters panic inside the
// registry's matching, which tells filterPanicked; the storages and the
// client's wrapper are guarded where the engine holds them (storages.go,
// guardedclient.go).

// countPanic counts the attempt's panic, if it panicked, as the kind's
// callback of that kind (metrics.Callback...).
func countPanic(kind, callback, handler string, o execution.Outcome) {
	if o.Panic != nil {
		metrics.CallbackPanicked(kind, callback, handler)
	}
}
