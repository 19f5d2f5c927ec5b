// Package runner holds the parts of the command line's runner
// (handlers.Main and Run) that need nothing of the facade: its servers
// secured as kubebuilder's scaffolds secure theirs (the metrics over HTTPS
// to callers the API server authenticates and authorizes, HTTP/2 off
// unless asked for, the webhook server's certificates: a given directory,
// or in development a self-signed one that the API server is told to
// trust), the liveness endpoint, the logger, the cluster's connection, and
// the manager's run.
package runner

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

// MetricsSecurity is how the metrics are served: Insecure over plain
// HTTP, else over HTTPS with the certificate of CertDir (empty: a
// self-signed one); HTTP2 allows HTTP/2.
type MetricsSecurity struct {
	Insecure bool
	CertDir  string
	HTTP2    bool
}

// Metrics configures the runner's metrics server at the address as
// kubebuilder's scaffolds do: over HTTPS, with the certificate of
// CertDir or a self-signed one, to the callers whom the API server
// authenticates (TokenReview) and authorizes to get /metrics
// (SubjectAccessReview); or, with Insecure, over plain HTTP to
// anyone.
func Metrics(log logr.Logger, address string, opts MetricsSecurity) (metricsserver.Options, error) {
	o := metricsserver.Options{BindAddress: address}
	if address == "0" {
		return o, nil
	}
	if opts.Insecure {
		if opts.CertDir != "" {
			return o, errors.New("--metrics-cert-dir: the metrics are served over plain HTTP (--metrics-secure=false), with no certificate")
		}
		log.Info("The metrics are served over plain HTTP to anyone: --metrics-secure=false.", "address", address)
		return o, nil
	}
	o.SecureServing = true
	o.FilterProvider = filters.WithAuthenticationAndAuthorization
	if !opts.HTTP2 {
		o.TLSOpts = []func(*tls.Config){onlyHTTP1}
	}
	if dir := opts.CertDir; dir != "" {
		for _, name := range []string{"tls.crt", "tls.key"} {
			if !exists(filepath.Join(dir, name)) {
				return o, fmt.Errorf("the metrics server's certificate directory %s holds no %s: mount the certificate there, or leave --metrics-cert-dir out for a self-signed one", dir, name)
			}
		}
		o.CertDir = dir
	}
	return o, nil
}

// WithHTTP2 returns the webhook server's options with HTTP/2 switched off
// unless enabled: the server then offers HTTP/1.1 only, which HTTP/2's
// rapid reset attack (CVE-2023-44487) cannot use. The program's own TLS
// options come after, and may choose otherwise.
func WithHTTP2(o webhook.Options, enabled bool) webhook.Options {
	if !enabled {
		o.TLSOpts = append([]func(*tls.Config){onlyHTTP1}, slices.Clip(o.TLSOpts)...)
	}
	return o
}

// onlyHTTP1 makes a TLS server offer HTTP/1.1 only.
func onlyHTTP1(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }
