package metrics

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/runtime/schema"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// TestNames pins the wire names: dashboards and alerts use them.
func TestNames(t *testing.T) {
	got := []string{HandlerInvocations, HandlerDuration, ObjectsRetrying, ObjectsFailed, DaemonsRunning,
		DaemonsStopping, DaemonStops, WebhookCalls, OperatorFrozen, ShardMembers, ShardObjects,
		LabelKind, LabelHandler, LabelCause, LabelOutcome, LabelReason, LabelType, LabelIdentity, LabelRing,
		CauseDaemon, CauseTimer, WebhookAllowed, WebhookDenied, WebhookError}
	want := []string{"kopf_handler_invocations_total", "kopf_handler_duration_seconds", "kopf_objects_retrying",
		"kopf_objects_failed", "kopf_daemons_running", "kopf_daemons_stopping", "kopf_daemon_stops_total",
		"kopf_webhook_calls_total", "kopf_operator_frozen", "kopf_shard_members", "kopf_shard_objects",
		"kind", "handler", "cause", "outcome", "reason", "type", "identity", "ring",
		"daemon", "timer", "allowed", "denied", "error"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("names -want +got:\n%s", diff)
	}
}

// TestConventions lints every metric against Prometheus' naming
// conventions (units, _total for counters, help texts).
func TestConventions(t *testing.T) {
	Invoked("Lint.test", "h", "create", "success", time.Second, true)
	DaemonSpawned("Lint.test", "h")
	DaemonStopping("Lint.test", "h")
	DaemonExited("Lint.test", "h", "DONE", true)
	WebhookCalled("Lint.test", "validating", "h", WebhookAllowed)
	Objects("Lint.test")
	ShardMembersLive("lint", 3)
	ShardObjectsOf("lint", "Lint.test").Set(1)
	defer ForgetShard("lint")
	defer WatchFrozen("lint", frozenState{})()
	for _, c := range collectors() {
		problems, err := testutil.CollectAndLint(c)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range problems {
			t.Errorf("%s: %s", p.Metric, p.Text)
		}
	}
}

type frozenState struct{}

func (frozenState) Frozen() (bool, string) { return false, "" }

func TestRegisterIsIdempotent(t *testing.T) {
	for range 2 {
		if err := Register(); err != nil {
			t.Fatalf("Register() = %v", err)
		}
	}
	// Another registry that has some of them already is fine too.
	r := prometheus.NewRegistry()
	r.MustRegister(invocations)
	if err := register(r); err != nil {
		t.Errorf("register() over a partial registration = %v", err)
	}
	Invoked("Registered.test", "h", "create", "success", time.Millisecond, true)
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, f := range families {
		found = found || f.GetName() == HandlerInvocations
	}
	if !found {
		t.Errorf("%s is not on controller-runtime's registry", HandlerInvocations)
	}
}

func TestKind(t *testing.T) {
	tests := map[string]schema.GroupVersionKind{
		"KopfExample.kopf.dev": {Group: "kopf.dev", Version: "v1", Kind: "KopfExample"},
		"Deployment.apps":      {Group: "apps", Version: "v1", Kind: "Deployment"},
		"Pod":                  {Version: "v1", Kind: "Pod"},
	}
	for want, gvk := range tests {
		if got := Kind(gvk); got != want {
			t.Errorf("Kind(%v) = %q, want %q", gvk, got, want)
		}
	}
}

// TestInvokedObservesOnlyCalls: a handler whose limits ran out before its
// call is counted, but adds no duration.
func TestInvokedObservesOnlyCalls(t *testing.T) {
	const kind = "Invoked.test"
	Invoked(kind, "h", "update", "success", 2*time.Second, true)
	Invoked(kind, "h", "update", "timeout", 0, false)
	var m dto.Metric
	if err := durations.WithLabelValues(kind, "h", "update").(prometheus.Metric).Write(&m); err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{
		"success":  testutil.ToFloat64(invocations.WithLabelValues(kind, "h", "update", "success")),
		"timeout":  testutil.ToFloat64(invocations.WithLabelValues(kind, "h", "update", "timeout")),
		"observed": float64(m.GetHistogram().GetSampleCount()),
		"seconds":  m.GetHistogram().GetSampleSum(),
	}
	want := map[string]float64{"success": 1, "timeout": 1, "observed": 1, "seconds": 2}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("-want +got:\n%s", diff)
	}
}
