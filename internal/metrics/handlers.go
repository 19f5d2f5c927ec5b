package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// durationBuckets span handlers of milliseconds to daemons of an hour.
var durationBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600}

var (
	invocations = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: HandlerInvocations,
		Help: "Attempts of kopf-go handlers (change handlers, daemons, timers), by the cause they ran for and what became of them.",
	}, []string{LabelKind, LabelHandler, LabelCause, LabelOutcome})
	durations = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    HandlerDuration,
		Help:    "How long the calls of kopf-go handlers took, by the cause they ran for.",
		Buckets: durationBuckets,
	}, []string{LabelKind, LabelHandler, LabelCause})
)

// Invoked counts one attempt of a handler with its outcome (an
// execution.Class), and observes its duration if its function was called:
// a handler whose timeout or retries ran out before the attempt took no
// time of its own.
func Invoked(kind, handler, cause, outcome string, took time.Duration, called bool) {
	invocations.WithLabelValues(kind, handler, cause, outcome).Inc()
	if called {
		durations.WithLabelValues(kind, handler, cause).Observe(took.Seconds())
	}
}

// InvokedOf is Invoked for the handlers of one kind: what a round of
// change handlers reports each attempt to.
func InvokedOf(kind string) func(handler, cause, outcome string, took time.Duration, called bool) {
	return func(handler, cause, outcome string, took time.Duration, called bool) {
		Invoked(kind, handler, cause, outcome, took, called)
	}
}
