// Package metrics defines kopf-go's Prometheus metrics: what handlers,
// daemons, timers and webhooks did, and where objects stand, per kind and
// handler. They are registered on controller-runtime's registry, so the
// manager's metrics server serves them beside controller-runtime's own.
// Labels never carry object names or uids: their values are bounded by
// what the operator registers. The names and label values are wire names
// (dashboards and alerts depend on them); docs/metrics.md lists them.
package metrics

import (
	"errors"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime/schema"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Names of the metrics.
const (
	HandlerInvocations = "kopf_handler_invocations_total"
	HandlerDuration    = "kopf_handler_duration_seconds"
	ObjectsRetrying    = "kopf_objects_retrying"
	ObjectsFailed      = "kopf_objects_failed"
	DaemonsRunning     = "kopf_daemons_running"
	DaemonsStopping    = "kopf_daemons_stopping"
	DaemonStops        = "kopf_daemon_stops_total"
	WebhookCalls       = "kopf_webhook_calls_total"
	OperatorFrozen     = "kopf_operator_frozen"
	ShardMembers       = "kopf_shard_members"
	ShardObjects       = "kopf_shard_objects"
)

// Names of the labels.
const (
	LabelKind     = "kind"
	LabelHandler  = "handler"
	LabelCause    = "cause"
	LabelOutcome  = "outcome"
	LabelReason   = "reason"
	LabelType     = "type"
	LabelIdentity = "identity"
	LabelRing     = "ring"
)

// Causes of daemons' and timers' calls, beside Kopf's change causes
// (create, update, delete, resume).
const (
	CauseDaemon = "daemon"
	CauseTimer  = "timer"
)

// Kind is the kind label of objects of a kind: Kind.group, as kubectl
// names kinds ("KopfExample.kopf.dev", "Deployment.apps"; "Pod" for the
// core group). The version is left out, so that series survive a version
// upgrade.
func Kind(gvk schema.GroupVersionKind) string { return gvk.GroupKind().String() }

// collectors are every metric of this package.
func collectors() []prometheus.Collector {
	return []prometheus.Collector{invocations, durations, objectsRetrying, objectsFailed,
		daemonsRunning, daemonsStopping, daemonStops, webhookCalls, frozen, shardMembers, shardObjects,
		callbackPanics}
}

var (
	registerOnce sync.Once
	registerErr  error
)

// Register adds the metrics to controller-runtime's registry, once per
// process: several operators in one process (as in tests) share them.
// Metrics that are not registered still count; they are only not served.
func Register() error {
	registerOnce.Do(func() { registerErr = register(crmetrics.Registry) })
	return registerErr
}

// register adds the collectors to a registry; ones already there (from
// an earlier registration) are fine.
func register(r prometheus.Registerer) error {
	var errs []error
	for _, c := range collectors() {
		var already prometheus.AlreadyRegisteredError
		if err := r.Register(c); err != nil && !errors.As(err, &already) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
