package handlers

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/kopf-go/kopf/internal/runner"
)

// Flags are the standalone runner's command line, as Kopf's `kopf run`.
type Flags struct {
	// Standalone disables peering.
	Standalone bool
	// Peering names the peering object (and makes peering mandatory).
	Peering string
	// Priority is this operator's peering priority.
	Priority int
	// Dev sets the priority to 666, to pause other operators while
	// developing (Kopf's --dev).
	Dev bool
	// Namespaces are the patterns of the namespaces to serve, one per
	// flag (docs/scopes.md); none means cluster-wide.
	Namespaces []string
	// AllNamespaces serves the whole cluster (the default when no
	// namespace is given).
	AllNamespaces bool
	// Verbose logs debug lines too (-v, --verbose, -d, --debug).
	Verbose bool
	// Quiet logs errors only (-q, --quiet).
	Quiet bool
	// LogFormat is plain (the default, also empty: time, level, logger, message and
	// values on one line), full (plain with the caller), or json (one JSON
	// object per line, for log collectors), as Kopf's --log-format.
	LogFormat string
	// WebhookHost, WebhookPort and WebhookCertDir configure the webhook
	// server (controller-runtime's webhook.Options); the flags win over
	// Options.WebhookServer.
	WebhookHost    string
	WebhookPort    int
	WebhookCertDir string
	// Kubeconfig is the kubeconfig file; default: $KUBECONFIG, then
	// ~/.kube/config, then the in-cluster configuration.
	Kubeconfig string
	// Liveness is the URL at which to serve the probes' results, as Kopf's
	// --liveness (e.g. http://0.0.0.0:8080/healthz).
	Liveness string
	// ShardRing makes this replica a member of the ring of that name: the
	// replicas of one ring share the objects (docs/sharding.md).
	ShardRing string
	// ShardNoStandby keeps a ring member from watching the objects it
	// would adopt before anyone dies (Sharding.NoStandby).
	ShardNoStandby bool
	// HealthProbeBindAddress is where the manager serves /healthz and
	// /readyz (e.g. :8081), as kubebuilder's scaffolds name the flag:
	// readiness fails while the operator is frozen or has lost its ring
	// membership. Empty: off.
	HealthProbeBindAddress string
	// MetricsBindAddress is where the manager serves /metrics (e.g.
	// :8443), as kubebuilder's scaffolds name the flag; "0" switches the
	// metrics off. Empty: not given (Options.MetricsBindAddress, or off).
	MetricsBindAddress string
	// MetricsSecure, if false (--metrics-secure=false), serves /metrics
	// over plain HTTP to anyone, instead of over HTTPS to the callers whom
	// the API server authorizes. Nil: not given (Options.InsecureMetrics).
	MetricsSecure *bool
	// MetricsCertDir is the directory with the metrics server's tls.crt
	// and tls.key (Options.MetricsCertDir); without it, the server makes a
	// self-signed certificate.
	MetricsCertDir string
	// EnableHTTP2 lets the metrics and webhook servers speak HTTP/2
	// (Options.EnableHTTP2); off, they speak HTTP/1.1 only.
	EnableHTTP2 bool
	// WebhookClientCAName names the CA file in the webhook server's
	// certificate directory: the server then requires client certificates
	// signed by it, i.e. the API server's (webhook.Options.ClientCAName).
	WebhookClientCAName string
	// WebhookSelfSigned serves the webhooks with a self-signed certificate,
	// for development (WebhookOptions.SelfSigned).
	WebhookSelfSigned bool
	// WebhookMaxConcurrentReviews bounds the admission reviews served at
	// once (WebhookOptions.MaxConcurrentReviews); 0: not given.
	WebhookMaxConcurrentReviews int
}

// devPriority is the priority --dev gives, as in Kopf.
const devPriority = 666

// ParseFlags parses the runner's command line (without the program name).
func ParseFlags(args []string) (Flags, error) {
	var f Flags
	fs := flag.NewFlagSet("operator", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.BoolVar(&f.Standalone, "standalone", false, "run without peering")
	fs.StringVar(&f.Peering, "peering", "", "the peering object's name (makes peering mandatory)")
	fs.StringVar(&f.Peering, "P", "", "short for --peering")
	fs.IntVar(&f.Priority, "priority", 0, "the peering priority")
	fs.IntVar(&f.Priority, "p", 0, "short for --priority")
	fs.BoolVar(&f.Dev, "dev", false, "development mode: priority 666")
	fs.Var((*runner.Patterns)(&f.Namespaces), "namespace", "a namespace pattern to serve (repeatable; globs, !negations, comma lists)")
	fs.Var((*runner.Patterns)(&f.Namespaces), "n", "short for --namespace")
	fs.BoolVar(&f.AllNamespaces, "all-namespaces", false, "serve the whole cluster")
	fs.BoolVar(&f.AllNamespaces, "A", false, "short for --all-namespaces")
	fs.BoolVar(&f.Verbose, "verbose", false, "log debug lines too")
	fs.BoolVar(&f.Verbose, "v", false, "short for --verbose")
	fs.BoolVar(&f.Verbose, "debug", false, "same as --verbose")
	fs.BoolVar(&f.Verbose, "d", false, "short for --debug")
	fs.BoolVar(&f.Quiet, "quiet", false, "log errors only")
	fs.BoolVar(&f.Quiet, "q", false, "short for --quiet")
	fs.StringVar(&f.LogFormat, "log-format", "", `plain, full or json (default "plain")`)
	fs.StringVar(&f.WebhookHost, "webhook-host", "", "the address the webhook server listens on (default: all)")
	fs.IntVar(&f.WebhookPort, "webhook-port", 0, "the webhook server's port (default 9443)")
	fs.StringVar(&f.WebhookCertDir, "webhook-cert-dir", "", "the directory with the webhook server's tls.crt and tls.key")
	fs.StringVar(&f.Kubeconfig, "kubeconfig", "", "the kubeconfig file")
	fs.StringVar(&f.Liveness, "liveness", "", "serve the probes' results at this URL, e.g. http://0.0.0.0:8080/healthz")
	fs.StringVar(&f.Liveness, "L", "", "short for --liveness")
	fs.StringVar(&f.ShardRing, "shard-ring", "", "share the objects with the other replicas of this ring")
	fs.BoolVar(&f.ShardNoStandby, "shard-no-standby", false, "do not watch, before a ring member dies, the objects this replica would adopt: less memory, a slower takeover")
	fs.StringVar(&f.HealthProbeBindAddress, "health-probe-bind-address", "", "serve /healthz and /readyz at this address, e.g. :8081 (default: off)")
	fs.StringVar(&f.MetricsBindAddress, "metrics-bind-address", "", `serve /metrics at this address, e.g. :8443 (default "0": off)`)
	fs.Var(runner.OptionalBool(&f.MetricsSecure), "metrics-secure", "serve /metrics over HTTPS to the callers the API server authorizes (default true; false: plain HTTP to anyone)")
	fs.StringVar(&f.MetricsCertDir, "metrics-cert-dir", "", "the directory with the metrics server's tls.crt and tls.key (default: a self-signed certificate)")
	fs.BoolVar(&f.EnableHTTP2, "enable-http2", false, "let the metrics and webhook servers speak HTTP/2")
	fs.StringVar(&f.WebhookClientCAName, "webhook-client-ca-name", "", "the CA file in --webhook-cert-dir that the API server's client certificate must be signed by (default: none required)")
	fs.BoolVar(&f.WebhookSelfSigned, "webhook-self-signed", false, "serve the webhooks with a self-signed certificate, for development")
	fs.IntVar(&f.WebhookMaxConcurrentReviews, "webhook-max-concurrent-reviews", 0, "admission reviews served at once, a review over 1 MiB counting once per MiB (default 16)")
	if err := fs.Parse(args); err != nil {
		return f, fmt.Errorf("parse the command line: %w", err)
	}
	if fs.NArg() > 0 {
		return f, fmt.Errorf("parse the command line: unexpected arguments %q", fs.Args())
	}
	switch f.LogFormat {
	case "", "plain", "full", "json":
	default:
		return f, fmt.Errorf("parse the command line: --log-format must be plain, full or json, not %q", f.LogFormat)
	}
	if f.Verbose && f.Quiet {
		return f, errors.New("parse the command line: --verbose and --quiet exclude each other")
	}
	if f.WebhookMaxConcurrentReviews < 0 {
		return f, errors.New("parse the command line: --webhook-max-concurrent-reviews must not be negative")
	}
	if f.AllNamespaces && len(f.Namespaces) > 0 {
		return f, errors.New("parse the command line: --all-namespaces and --namespace exclude each other")
	}
	if f.Peering == "" {
		f.Peering = os.Getenv("KOPF_RUN_PEERING") // as Kopf's kopf run
	}
	if f.Dev {
		f.Priority = devPriority
	}
	return f, nil
}
