package metrics

import "github.com/prometheus/client_golang/prometheus"

// Outcomes of webhook handlers' calls.
const (
	// WebhookAllowed: the handler returned no error.
	WebhookAllowed = "allowed"
	// WebhookDenied: the handler denied the request on purpose (an
	// admission error, a PermanentError or a TemporaryError).
	WebhookDenied = "denied"
	// WebhookError: the handler failed with any other error or panicked;
	// the request is denied too.
	WebhookError = "error"
)

var webhookCalls = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: WebhookCalls,
	Help: "Calls of kopf-go's validating and mutating handlers by admission reviews, by outcome: allowed, denied, error.",
}, []string{LabelKind, LabelType, LabelHandler, LabelOutcome})

// WebhookCalled counts one call of a webhook handler of a type
// (validating, mutating).
func WebhookCalled(kind, typ, handler, outcome string) {
	webhookCalls.WithLabelValues(kind, typ, handler, outcome).Inc()
}
