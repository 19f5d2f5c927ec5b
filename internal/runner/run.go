package runner

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	uberzap "go.uber.org/zap"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/go-logr/logr"
	"go.uber.org/zap/zapcore"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// Logger is the runner's logger writing to out, at the level (debug if
// verbose, errors only if quiet) and in the format asked (console, json,
// full: with the caller).
func Logger(verbose, quiet bool, format string, out io.Writer) logr.Logger {
	level := zapcore.InfoLevel
	switch {
	case verbose:
		level = zapcore.DebugLevel
	case quiet:
		level = zapcore.ErrorLevel
	}
	// Stack traces would point into the engine, not at the handler's error.
	opts := []zap.Opts{zap.ConsoleEncoder(), zap.Level(level), zap.StacktraceLevel(zapcore.PanicLevel), zap.WriteTo(out)}
	switch format {
	case "json":
		opts = append(opts, zap.JSONEncoder())
	case "full":
		opts = append(opts, zap.RawZapOpts(uberzap.AddCaller()))
	}
	return zap.New(opts...)
}

// Run runs the manager until ctx ends, with its graceful stop. If
// the replica loses its ring membership, it returns errLost
// at once instead, without waiting for the graceful stop, as
// controller-runtime skips it on lost leadership: the process must exit
// before the others may take the replica's objects over, whatever its
// handlers and daemons still do (they were cancelled at the fence). The
// manager stops on its own after that, in a process that is exiting.
func Run(ctx context.Context, mgr manager.Manager, lost <-chan struct{}, errLost error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	select {
	case err := <-done:
		return err
	case <-lost:
		return errLost
	}
}

// Liveness serves the probes' results as JSON at the URL: the engine's
// own prober, which sees the operator's memo and indices.
func Liveness(mgr manager.Manager, prober http.Handler, liveness string) error {
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

// Config is the connection of the kubeconfig (--kubeconfig, else
// $KUBECONFIG, ~/.kube/config) or the in-cluster one.
func Config(kubeconfig string) (*rest.Config, error) {
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
