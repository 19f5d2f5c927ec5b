package handlers

import (
	"testing"

	"k8s.io/utils/ptr"
)

// The command line's server flags win over the options.
func TestWithServerFlags(t *testing.T) {
	opts := RunOptions{InsecureMetrics: true, MetricsCertDir: "/o", Options: Options{Webhooks: WebhookOptions{MaxConcurrentReviews: 3}}}
	got := withServerFlags(opts, Flags{MetricsSecure: ptr.To(true), MetricsCertDir: "/f", EnableHTTP2: true,
		WebhookSelfSigned: true, WebhookMaxConcurrentReviews: 5})
	if got.InsecureMetrics || got.MetricsCertDir != "/f" || !got.EnableHTTP2 || !got.Webhooks.SelfSigned || got.Webhooks.MaxConcurrentReviews != 5 {
		t.Errorf("withServerFlags() = %+v, want the flags' values", got)
	}
	got = withServerFlags(opts, Flags{})
	if !got.InsecureMetrics || got.MetricsCertDir != "/o" || got.Webhooks.MaxConcurrentReviews != 3 {
		t.Errorf("withServerFlags() without flags = %+v, want the options' values", got)
	}
	if got := withServerFlags(RunOptions{}, Flags{MetricsSecure: ptr.To(false)}); !got.InsecureMetrics {
		t.Error("--metrics-secure=false leaves the metrics secure")
	}
}
