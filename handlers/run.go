package handlers

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/kopf-go/kopf/internal/engine"
	"github.com/kopf-go/kopf/internal/relogin"
	"github.com/kopf-go/kopf/internal/runner"
	"github.com/kopf-go/kopf/internal/scopes"
)

// RunOptions configure the standalone runner (Main, Run): the engine's
// Options, and the settings of the manager that the runner makes for it,
// which only the runner reads. A program that makes its own manager and
// calls SetupWithManager configures that manager itself (its scheme,
// metrics and webhook servers) and passes only the Options.
type RunOptions struct {
	// Options are the engine's settings; the command line's flags
	// (--namespace, --peering, --standalone, ...) add to them.
	Options
	// WebhookServer configures the webhook server of the manager that the
	// runner makes (address, port, certificates). The runner's --webhook-*
	// flags win over it.
	WebhookServer webhook.Options
	// Scheme is the scheme of the manager that the runner makes: the Go
	// types of the kinds its handlers use (For[T]) and read. Default:
	// client-go's, with the built-in kinds only.
	Scheme *runtime.Scheme
	// MetricsBindAddress is where the runner's manager serves /metrics
	// (e.g. ":8443"); empty or "0": off. The runner's
	// --metrics-bind-address wins over it.
	MetricsBindAddress string
	// InsecureMetrics makes the runner serve /metrics over plain
	// HTTP to anyone (--metrics-secure=false). By default it serves them
	// over HTTPS, to the callers whom the API server's TokenReview and
	// SubjectAccessReview allow, as kubebuilder's scaffolds do.
	InsecureMetrics bool
	// MetricsCertDir is the directory with the runner's metrics server's
	// tls.crt and tls.key (--metrics-cert-dir). Default: a self-signed
	// certificate made at the start.
	MetricsCertDir string
	// EnableHTTP2 lets the runner's metrics and webhook servers
	// speak HTTP/2 (--enable-http2). By default they speak HTTP/1.1 only,
	// as kubebuilder's scaffolds do since HTTP/2's rapid reset attack
	// (CVE-2023-44487).
	EnableHTTP2 bool
}

// Main runs the operator standalone with the process's command line until
// SIGINT or SIGTERM, then exits: 0 after a graceful stop, 1 on failure.
func Main(reg *Registry, opts RunOptions) {
	if err := Run(ctrl.SetupSignalHandler(), reg, os.Args[1:], opts); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// Run parses the command line, connects to the cluster, and runs the
// engine in a manager of its own until ctx is done.
func Run(ctx context.Context, reg *Registry, args []string, opts RunOptions) error {
	f, err := ParseFlags(args)
	if err != nil {
		return err
	}
	logger := runner.Logger(f.Verbose, f.Quiet, f.LogFormat, os.Stderr)
	ctrl.SetLogger(logger)
	opts = withFlags(opts, f)
	if opts.TracerProvider == nil {
		tp, stop, err := runner.Tracing(ctx, logger.WithName("tracing"), filepath.Base(os.Args[0]))
		if err != nil {
			return err
		}
		defer stop() // after the manager: its last spans go too
		opts.TracerProvider = tp
	}
	// Resolved once, for the login handlers and the engine alike.
	s, err := opts.settings().Resolved()
	if err != nil {
		return err
	}
	cfg, relogins, err := clusterConfig(ctx, reg, s, f.Kubeconfig)
	if err != nil {
		return err
	}
	if relogins != nil {
		defer relogins.Close() // after the manager: it ends a login under way
	}
	mopts, err := runnerManagerOptions(logger, f, opts, s)
	if err != nil {
		return err
	}
	mgr, err := manager.New(cfg, mopts)
	if err != nil {
		return fmt.Errorf("create the manager: %w", err)
	}
	installed, err := setup(mgr, reg, opts.Options, s)
	if err != nil {
		return err
	}
	if f.Liveness != "" {
		if err := runner.Liveness(mgr, installed.Prober, f.Liveness); err != nil {
			return err
		}
	}
	logger.Info("Client is configured.", "host", cfg.Host)
	if err := runner.Run(ctx, mgr, installed.Lost, ErrShardMembershipLost); err != nil {
		return fmt.Errorf("run the operator: %w", err)
	}
	logger.Info("Operator has stopped.")
	return nil
}

// runnerManagerOptions configure the runner's own manager. Its cache,
// which handlers read through (Client), holds only the served namespaces
// when they are named exactly, so that a namespaced operator needs only
// namespaced RBAC. (With patterns, handlers read through the engine's
// cache, which follows them: docs/scopes.md.)
func runnerManagerOptions(logger logr.Logger, f Flags, opts RunOptions, s engine.Settings) (manager.Options, error) {
	namespaces, err := scopes.ParseNamespaces(opts.Namespaces)
	if err != nil {
		return manager.Options{}, fmt.Errorf("invalid namespaces: %w", err)
	}
	var cacheOpts cache.Options
	if namespaces.Exact() {
		cacheOpts.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range namespaces.Names() {
			cacheOpts.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	// Run may run again in one process, e.g. in tests: its controllers'
	// names need not be unique (they only label controller-runtime's
	// metrics, and the engine's controllers skip the check anyway).
	skipNameValidation := true
	// The manager's own stop deadline comes after the engine's grace, so
	// that the engine can say what it leaves behind.
	managerGrace := s.Daemons.ShutdownGrace + 10*time.Second
	metrics, err := runner.Metrics(logger, metricsAddress(f, opts), runner.MetricsSecurity{Insecure: opts.InsecureMetrics, CertDir: opts.MetricsCertDir, HTTP2: opts.EnableHTTP2})
	if err != nil {
		return manager.Options{}, err
	}
	return manager.Options{
		Logger:                  logger,
		Metrics:                 metrics,
		HealthProbeBindAddress:  f.HealthProbeBindAddress,
		Controller:              config.Controller{SkipNameValidation: &skipNameValidation},
		GracefulShutdownTimeout: &managerGrace,
		WebhookServer:           webhook.NewServer(runner.WithHTTP2(webhookOptions(f, opts.WebhookServer), opts.EnableHTTP2)),
		Scheme:                  opts.Scheme,
		Cache:                   cacheOpts,
	}, nil
}

// webhookOptions are the webhook server's options with the flags' added.
func webhookOptions(f Flags, o webhook.Options) webhook.Options {
	if f.WebhookHost != "" {
		o.Host = f.WebhookHost
	}
	if f.WebhookPort != 0 {
		o.Port = f.WebhookPort
	}
	if f.WebhookCertDir != "" {
		o.CertDir = f.WebhookCertDir
	}
	if f.WebhookClientCAName != "" {
		o.ClientCAName = f.WebhookClientCAName
	}
	return o
}

// withFlags returns the options with the command line's namespaces and
// peering flags added.
func withFlags(opts RunOptions, f Flags) RunOptions {
	opts.Namespaces = append(opts.Namespaces, f.Namespaces...)
	opts.Standalone = opts.Standalone || f.Standalone
	if f.Peering != "" {
		opts.Peering = f.Peering
	}
	if f.Priority != 0 {
		opts.Priority = f.Priority
	}
	if f.ShardRing != "" {
		opts.Sharding.Ring = f.ShardRing
	}
	if f.ShardNoStandby {
		opts.Sharding.NoStandby = true
	}
	return withServerFlags(opts, f)
}

// metricsAddress is where the runner's manager serves metrics: the flag,
// else the options, else nowhere ("0").
func metricsAddress(f Flags, opts RunOptions) string {
	switch {
	case f.MetricsBindAddress != "":
		return f.MetricsBindAddress
	case opts.MetricsBindAddress != "":
		return opts.MetricsBindAddress
	}
	return "0"
}

// clusterConfig is the connection the login handlers give (with their
// re-logins, which the caller closes), else the one of the kubeconfig
// (--kubeconfig, $KUBECONFIG, ~/.kube/config) or the in-cluster one.
func clusterConfig(ctx context.Context, reg *Registry, s engine.Settings, kubeconfig string) (*rest.Config, *relogin.Relogins, error) {
	cfg, err := reg.login(ctx, s)
	if err != nil {
		return nil, nil, err
	}
	var again *relogin.Relogins
	if cfg != nil {
		again = relogin.Wrap(ctx, cfg, func(ctx context.Context) (*rest.Config, error) { return reg.login(ctx, s) }, ctrl.Log.WithName("login"))
	}
	if cfg == nil {
		if cfg, err = runner.Config(kubeconfig); err != nil {
			return nil, nil, err
		}
	}
	if cfg.QPS == 0 {
		// client-go would throttle to 5 requests a second; like
		// controller-runtime's GetConfig (and Kopf, which has no client-side
		// limit), leave it to the API server's priority and fairness.
		cfg = rest.CopyConfig(cfg)
		cfg.QPS = -1
	}
	return cfg, again, nil
}
