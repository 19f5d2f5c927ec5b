package metrics

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestPanicNames pins the wire names of the callbacks' panics.
func TestPanicNames(t *testing.T) {
	got := []string{CallbackPanics, LabelCallback,
		CallbackChange, CallbackEvent, CallbackIndex, CallbackDaemon, CallbackTimer, CallbackDelay, CallbackFilter,
		CallbackWebhook, CallbackStartup, CallbackCleanup, CallbackLogin, CallbackProbe, CallbackStorage, CallbackClient,
		StorageProgress, StorageDiffBase}
	want := []string{"kopf_callback_panics_total", "callback",
		"change", "event", "index", "daemon", "timer", "delay", "filter",
		"webhook", "startup", "cleanup", "login", "probe", "storage", "client",
		"progress", "diffbase"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("names -want +got:\n%s", diff)
	}
}

// TestCallbackPanicked: each panic counts once, under its own labels.
func TestCallbackPanicked(t *testing.T) {
	const kind = "Panicked.test"
	CallbackPanicked(kind, CallbackFilter, "h")
	CallbackPanicked(kind, CallbackFilter, "h")
	CallbackPanicked(kind, CallbackChange, "h")
	CallbackPanicked("", CallbackLogin, "login")
	got := map[string]float64{
		"filter": testutil.ToFloat64(callbackPanics.WithLabelValues(kind, CallbackFilter, "h")),
		"change": testutil.ToFloat64(callbackPanics.WithLabelValues(kind, CallbackChange, "h")),
		"login":  testutil.ToFloat64(callbackPanics.WithLabelValues("", CallbackLogin, "login")),
	}
	want := map[string]float64{"filter": 2, "change": 1, "login": 1}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("-want +got:\n%s", diff)
	}
}
