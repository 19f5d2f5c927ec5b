// Command operator is the benchmark's operator process: kopf-go's engine
// (typed in a manager, or as the README's quick start) or the hand-written
// baseline reconciler, for the same objects, with the same number of
// workers. It counts its own API requests and handler calls and serves
// them, with its CPU time and memory, as JSON at /stats, for the
// benchmark's driver to read.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	goruntime "runtime"
	"runtime/pprof"
	"syscall"
	"time"

	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/kopf-go/kopf/test/bench/internal/kex"
	"github.com/kopf-go/kopf/test/bench/internal/requests"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

type config struct {
	variant   string
	namespace string
	workers   int
	daemons   bool
	logFile   string
	profile   string
	heap      string
	// shardRing, identity, handlerDelay and assignerWorkers are the quick
	// start's only: a member of a shard ring, its identity, how long its
	// create handler waits (simulated I/O), and how many objects the
	// ring's assigner writes at once.
	shardRing       string
	identity        string
	handlerDelay    time.Duration
	assignerWorkers int
	// countEvents counts the events the watches receive, besides the
	// requests (BenchmarkShardingScale).
	countEvents bool
	contention  bool
	// memProfileRate, if not 0, is the Go runtime's sampling of
	// allocations (runtime.MemProfileRate): 1 records every one.
	memProfileRate int
}

func run() error {
	var c config
	flag.StringVar(&c.variant, "variant", "kopf", "kopf (kopf-go's engine, typed, in a manager), forkind (the README's quick start: ForKind, unstructured, the standalone runner), baseline (the hand-written reconciler) or baseline-unstructured (the same for unstructured objects)")
	flag.StringVar(&c.namespace, "namespace", "default", "the namespace to serve")
	flag.IntVar(&c.workers, "workers", 16, "objects handled at once (MaxConcurrentReconciles)")
	flag.BoolVar(&c.daemons, "daemons", false, "kopf and forkind only: a daemon for every object")
	flag.StringVar(&c.logFile, "log", "", "write the log here (JSON lines at info level); none if empty")
	flag.StringVar(&c.profile, "cpuprofile", "", "write a CPU profile of the whole run here (go tool pprof)")
	flag.StringVar(&c.heap, "heapprofile", "", "write a heap profile here whenever /stats?gc=1 is read")
	flag.StringVar(&c.shardRing, "shard-ring", "", "forkind only: be a member of this shard ring (the runner's --shard-ring)")
	flag.StringVar(&c.identity, "identity", "", "forkind only: the replica's identity (Options.Identity; its member name in the ring is a hash of it)")
	flag.IntVar(&c.assignerWorkers, "assigner-workers", 0, "forkind only: objects the ring's assigner writes at once (Options.Sharding.AssignerWorkers; 0: the default)")
	flag.DurationVar(&c.handlerDelay, "handler-delay", 0, "forkind only: the create handler waits this long (simulated I/O), or until its context ends")
	flag.BoolVar(&c.countEvents, "count-events", false, "count the events that watches receive too (keys \"events watch <resource>\" in the stats)")
	flag.IntVar(&c.memProfileRate, "memprofilerate", 0, "sample one allocation per this many bytes in /debug/pprof/allocs (0: the Go runtime's 512 KiB)")
	flag.BoolVar(&c.contention, "contention", false, "record where goroutines block and wait for locks (/debug/pprof/block and /debug/pprof/mutex)")
	klog.InitFlags(nil) // -v=N shows client-go's own log lines on stderr
	flag.Parse()

	if c.memProfileRate > 0 {
		goruntime.MemProfileRate = c.memProfileRate
	}
	if c.contention {
		// Every blocking event of 10 µs or more, every tenth contended lock.
		goruntime.SetBlockProfileRate(10_000)
		goruntime.SetMutexProfileFraction(10)
	}
	if c.heap != "" {
		// Sample finely enough to account for objects of a few hundred
		// bytes each (the default samples every 512 KiB).
		goruntime.MemProfileRate = 512
	}
	if c.profile != "" {
		f, err := os.Create(c.profile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer func() {
			pprof.StopCPUProfile()
			_ = f.Close()
		}()
	}

	logOut := zapcore.AddSync(discard{})
	if c.logFile != "" {
		f, err := os.Create(c.logFile)
		if err != nil {
			return err
		}
		defer func() { _ = f.Close() }()
		logOut = zapcore.AddSync(f)
	}
	logger := zap.New(zap.WriteTo(logOut), zap.Level(zapcore.InfoLevel), zap.StacktraceLevel(zapcore.PanicLevel))
	ctrl.SetLogger(logger)

	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
	if err != nil {
		return fmt.Errorf("load the kubeconfig: %w", err)
	}
	// Every variant leaves throttling to the API server, as kopf-go's
	// runner and controller-runtime's GetConfig do.
	cfg.QPS = -1
	counter := &requests.Counter{Events: c.countEvents}
	counter.Instrument(cfg)

	rec := newRecorder()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	server := &http.Server{Handler: statsHandler(counter, rec, c.heap), ReadHeaderTimeout: 10 * time.Second}
	// The driver reads a stopped operator's last stats here: a replica
	// that leaves a ring makes requests until it has exited.
	defer printFinalStats(counter, rec)
	if c.variant == "forkind" {
		return serveBeside(server, listener, func() error { return runQuickStart(ctx, cfg, c, rec) })
	}
	if c.shardRing != "" || c.identity != "" || c.handlerDelay != 0 {
		return errors.New("--shard-ring, --identity and --handler-delay are for the forkind variant only")
	}

	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := kex.AddToScheme(scheme); err != nil {
		return err
	}
	mgr, err := manager.New(cfg, manager.Options{
		Scheme:  scheme,
		Logger:  logger,
		Metrics: metricsserver.Options{BindAddress: "0"},
		Cache:   cache.Options{DefaultNamespaces: map[string]cache.Config{c.namespace: {}}},
		// Unstructured reads come from the cache too (controller-runtime
		// sends them to the API server by default).
		Client: client.Options{Cache: &client.CacheOptions{Unstructured: true}},
	})
	if err != nil {
		return fmt.Errorf("create the manager: %w", err)
	}
	switch c.variant {
	case "kopf":
		err = setupKopf(mgr, c, rec)
	case "baseline", "baseline-unstructured":
		if c.daemons {
			return errors.New("--daemons is for the kopf and forkind variants only")
		}
		if c.variant == "baseline" {
			err = setupBaseline(mgr, c, rec)
		} else {
			err = setupBaselineUnstructured(mgr, c, rec)
		}
	default:
		err = fmt.Errorf("unknown variant %q", c.variant)
	}
	if err != nil {
		return err
	}
	if err := mgr.Add(&manager.Server{Name: "stats", Server: server, Listener: listener}); err != nil {
		return err
	}
	// The driver waits for this line.
	fmt.Printf("stats at http://%s/stats\n", listener.Addr())
	return mgr.Start(ctx)
}

// serveBeside serves the stats while run runs (an operator that brings its
// own manager), and stops serving when it returns.
func serveBeside(server *http.Server, listener net.Listener, run func() error) error {
	served := make(chan error, 1)
	go func() { served <- server.Serve(listener) }()
	// The driver waits for this line.
	fmt.Printf("stats at http://%s/stats\n", listener.Addr())
	err := run()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if shutdownErr := server.Shutdown(shutdownCtx); shutdownErr != nil && err == nil {
		err = shutdownErr
	}
	if serveErr := <-served; !errors.Is(serveErr, http.ErrServerClosed) && err == nil {
		err = serveErr
	}
	return err
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
