package handlers

import (
	"crypto/tls"
	"errors"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// withServerFlags returns the options with the command line's metrics,
// HTTP/2 and webhook flags added: the flags win.
func withServerFlags(opts RunOptions, f Flags) RunOptions {
	if f.MetricsSecure != nil {
		opts.InsecureMetrics = !*f.MetricsSecure
	}
	if f.MetricsCertDir != "" {
		opts.MetricsCertDir = f.MetricsCertDir
	}
	opts.EnableHTTP2 = opts.EnableHTTP2 || f.EnableHTTP2
	opts.Webhooks.SelfSigned = opts.Webhooks.SelfSigned || f.WebhookSelfSigned
	if f.WebhookMaxConcurrentReviews != 0 {
		opts.Webhooks.MaxConcurrentReviews = f.WebhookMaxConcurrentReviews
	}
	return opts
}

// metricsOptions configure the runner's metrics server at the address as
// kubebuilder's scaffolds do: over HTTPS, with the certificate of
// MetricsCertDir or a self-signed one, to the callers whom the API server
// authenticates (TokenReview) and authorizes to get /metrics
// (SubjectAccessReview); or, with InsecureMetrics, over plain HTTP to
// anyone.
func metricsOptions(log logr.Logger, address string, opts RunOptions) (metricsserver.Options, error) {
	o := metricsserver.Options{BindAddress: address}
	if address == "0" {
		return o, nil
	}
	if opts.InsecureMetrics {
		if opts.MetricsCertDir != "" {
			return o, errors.New("--metrics-cert-dir: the metrics are served over plain HTTP (--metrics-secure=false), with no certificate")
		}
		log.Info("The metrics are served over plain HTTP to anyone: --metrics-secure=false.", "address", address)
		return o, nil
	}
	o.SecureServing = true
	o.FilterProvider = filters.WithAuthenticationAndAuthorization
	if !opts.EnableHTTP2 {
		o.TLSOpts = []func(*tls.Config){onlyHTTP1}
	}
	if dir := opts.MetricsCertDir; dir != "" {
		for _, name := range []string{"tls.crt", "tls.key"} {
			if !exists(filepath.Join(dir, name)) {
				return o, fmt.Errorf("the metrics server's certificate directory %s holds no %s: mount the certificate there, or leave --metrics-cert-dir out for a self-signed one", dir, name)
			}
		}
		o.CertDir = dir
	}
	return o, nil
}

// withHTTP2 returns the webhook server's options with HTTP/2 switched off
// unless enabled: the server then offers HTTP/1.1 only, which HTTP/2's
// rapid reset attack (CVE-2023-44487) cannot use. The program's own TLS
// options come after, and may choose otherwise.
func withHTTP2(o webhook.Options, enabled bool) webhook.Options {
	if !enabled {
		o.TLSOpts = append([]func(*tls.Config){onlyHTTP1}, slices.Clip(o.TLSOpts)...)
	}
	return o
}

// onlyHTTP1 makes a TLS server offer HTTP/1.1 only.
func onlyHTTP1(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }
