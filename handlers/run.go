package handlers

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/go-logr/logr"
	uberzap "go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/kopf-go/kopf/internal/daemons"
	"github.com/kopf-go/kopf/internal/reactor"
	"github.com/kopf-go/kopf/internal/scopes"
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
	// HealthProbeBindAddress is where the manager serves /healthz and
	// /readyz (e.g. :8081), as kubebuilder's scaffolds name the flag:
	// readiness fails while the operator is frozen or has lost its ring
	// membership. Empty: off.
	HealthProbeBindAddress string
	// MetricsBindAddress is where the manager serves /metrics over HTTP
	// (e.g. :8080), as kubebuilder's scaffolds name the flag; "0" switches
	// the metrics off. Empty: not given (Options.MetricsBindAddress, or off).
	MetricsBindAddress string
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
	fs.Var((*patternList)(&f.Namespaces), "namespace", "a namespace pattern to serve (repeatable; globs, !negations, comma lists)")
	fs.Var((*patternList)(&f.Namespaces), "n", "short for --namespace")
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
	fs.StringVar(&f.HealthProbeBindAddress, "health-probe-bind-address", "", "serve /healthz and /readyz at this address, e.g. :8081 (default: off)")
	fs.StringVar(&f.MetricsBindAddress, "metrics-bind-address", "", `serve /metrics at this address, e.g. :8080 (default "0": off)`)
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

// Main runs the operator standalone with the process's command line until
// SIGINT or SIGTERM, then exits: 0 after a graceful stop, 1 on failure.
func Main(reg *Registry, opts Options) {
	if err := Run(ctrl.SetupSignalHandler(), reg, os.Args[1:], opts); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// Run parses the command line, connects to the cluster, and runs the
// engine in a manager of its own until ctx is done.
func Run(ctx context.Context, reg *Registry, args []string, opts Options) error {
	f, err := ParseFlags(args)
	if err != nil {
		return err
	}
	logger := runnerLogger(f, os.Stderr)
	ctrl.SetLogger(logger)
	cfg, err := clusterConfig(ctx, reg, opts, f.Kubeconfig)
	if err != nil {
		return err
	}
	opts = withFlags(opts, f)
	mopts, err := runnerManagerOptions(logger, f, opts)
	if err != nil {
		return err
	}
	mgr, err := manager.New(cfg, mopts)
	if err != nil {
		return fmt.Errorf("create the manager: %w", err)
	}
	installed, err := setup(mgr, reg, opts)
	if err != nil {
		return err
	}
	if f.Liveness != "" {
		if err := serveLiveness(mgr, installed.Prober, f.Liveness); err != nil {
			return err
		}
	}
	logger.Info("Client is configured.", "host", cfg.Host)
	if err := runManager(ctx, mgr, installed.Lost); err != nil {
		return fmt.Errorf("run the operator: %w", err)
	}
	logger.Info("Operator has stopped.")
	return nil
}

// runnerLogger is the runner's logger writing to out, as the flags ask:
// its level and format.
func runnerLogger(f Flags, out io.Writer) logr.Logger {
	level := zapcore.InfoLevel
	switch {
	case f.Verbose:
		level = zapcore.DebugLevel
	case f.Quiet:
		level = zapcore.ErrorLevel
	}
	// Stack traces would point into the engine, not at the handler's error.
	opts := []zap.Opts{zap.ConsoleEncoder(), zap.Level(level), zap.StacktraceLevel(zapcore.PanicLevel), zap.WriteTo(out)}
	switch f.LogFormat {
	case "json":
		opts = append(opts, zap.JSONEncoder())
	case "full":
		opts = append(opts, zap.RawZapOpts(uberzap.AddCaller()))
	}
	return zap.New(opts...)
}

// runManager runs the manager until ctx ends, with its graceful stop. If
// the replica loses its ring membership, it returns ErrShardMembershipLost
// at once instead, without waiting for the graceful stop, as
// controller-runtime skips it on lost leadership: the process must exit
// before the others may take the replica's objects over, whatever its
// handlers and daemons still do (they were cancelled at the fence). The
// manager stops on its own after that, in a process that is exiting.
func runManager(ctx context.Context, mgr manager.Manager, lost <-chan struct{}) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	select {
	case err := <-done:
		return err
	case <-lost:
		return ErrShardMembershipLost
	}
}

// runnerManagerOptions configure the runner's own manager. Its cache,
// which handlers read through (Client), holds only the served namespaces
// when they are named exactly, so that a namespaced operator needs only
// namespaced RBAC. (With patterns, handlers read through the engine's
// cache, which follows them: docs/scopes.md.)
func runnerManagerOptions(logger logr.Logger, f Flags, opts Options) (manager.Options, error) {
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
	grace := opts.ShutdownGrace
	if grace == 0 {
		grace = daemons.DefaultShutdownGrace
	}
	managerGrace := grace + 10*time.Second
	return manager.Options{
		Logger:                  logger,
		Metrics:                 metricsserver.Options{BindAddress: metricsAddress(f, opts)},
		HealthProbeBindAddress:  f.HealthProbeBindAddress,
		Controller:              config.Controller{SkipNameValidation: &skipNameValidation},
		GracefulShutdownTimeout: &managerGrace,
		WebhookServer:           webhook.NewServer(webhookOptions(f, opts.WebhookServer)),
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
	return o
}

// withFlags returns the options with the command line's namespaces and
// peering flags added.
func withFlags(opts Options, f Flags) Options {
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
	return opts
}

// metricsAddress is where the runner's manager serves metrics: the flag,
// else the options, else nowhere ("0").
func metricsAddress(f Flags, opts Options) string {
	switch {
	case f.MetricsBindAddress != "":
		return f.MetricsBindAddress
	case opts.MetricsBindAddress != "":
		return opts.MetricsBindAddress
	}
	return "0"
}

// serveLiveness serves the probes' results as JSON at the URL: the
// engine's own prober, which sees the operator's memo and indices.
func serveLiveness(mgr manager.Manager, prober *reactor.Prober, liveness string) error {
	u, err := url.Parse(liveness)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return fmt.Errorf("--liveness %q: want an http:// URL with a host and port", liveness)
	}
	path := u.Path
	if path == "" {
		path = "/"
	}
	mux := http.NewServeMux()
	mux.Handle(path, prober)
	server := &manager.Server{Name: "liveness", Server: &http.Server{Addr: u.Host, Handler: mux, ReadHeaderTimeout: 10 * time.Second}}
	if err := mgr.Add(server); err != nil {
		return fmt.Errorf("serve the liveness endpoint: %w", err)
	}
	return nil
}

// clusterConfig is the connection the login handlers give, else the one
// of the kubeconfig (--kubeconfig, $KUBECONFIG, ~/.kube/config) or the
// in-cluster one.
func clusterConfig(ctx context.Context, reg *Registry, opts Options, kubeconfig string) (*rest.Config, error) {
	cfg, err := reg.login(ctx, opts)
	if err != nil {
		return nil, err
	}
	if cfg != nil {
		withRelogin(cfg, func(ctx context.Context) (*rest.Config, error) { return reg.login(ctx, opts) }, ctrl.Log.WithName("login"))
	}
	if cfg == nil {
		if cfg, err = restConfig(kubeconfig); err != nil {
			return nil, err
		}
	}
	if cfg.QPS == 0 {
		// client-go would throttle to 5 requests a second; like
		// controller-runtime's GetConfig (and Kopf, which has no client-side
		// limit), leave it to the API server's priority and fairness.
		cfg = rest.CopyConfig(cfg)
		cfg.QPS = -1
	}
	return cfg, nil
}

func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		cfg, err := ctrl.GetConfig()
		if err != nil {
			return nil, fmt.Errorf("find the cluster: %w", err)
		}
		return cfg, nil
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("load the kubeconfig %s: %w", kubeconfig, err)
	}
	return cfg, nil
}

// patternList is a repeatable flag of namespace patterns. A comma does
// not separate values: it separates the globs of one pattern, as in
// Kopf (docs/scopes.md).
type patternList []string

func (l *patternList) String() string { return strings.Join(*l, " ") }

func (l *patternList) Set(v string) error {
	if _, err := scopes.ParsePattern(v); err != nil {
		return err
	}
	*l = append(*l, v)
	return nil
}
