package kopftest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/kopf-go/kopf/handlers"
)

// Operator is an engine running in a manager of its own, serving one
// namespace, with its log lines captured.
type Operator struct {
	Logs    *Logs
	Manager manager.Manager
	cancel  context.CancelFunc
	done    chan error
}

// StartOperator runs the registry's handlers in a fresh manager that serves
// only the given namespace (and cluster-scoped objects), and stops it when
// the test ends. The tweaks may adjust the manager's options, e.g. to wrap
// its client.
func (e *Env) StartOperator(t testing.TB, namespace string, reg *handlers.Registry, opts handlers.Options, tweaks ...func(*manager.Options)) *Operator {
	t.Helper()
	op := e.NewOperator(t, namespace, reg, opts, tweaks...)
	op.Start(t)
	return op
}

// NewOperator prepares what StartOperator runs, without starting it, so
// that a test can add more to the manager first.
func (e *Env) NewOperator(t testing.TB, namespace string, reg *handlers.Registry, opts handlers.Options, tweaks ...func(*manager.Options)) *Operator {
	t.Helper()
	return e.NewOperatorOn(t, e.Config, namespace, reg, opts, tweaks...)
}

// NewOperatorOn is NewOperator with a connection of the test's own (e.g.
// with an instrumented transport).
func (e *Env) NewOperatorOn(t testing.TB, cfg *rest.Config, namespace string, reg *handlers.Registry, opts handlers.Options, tweaks ...func(*manager.Options)) *Operator {
	t.Helper()
	logs := &Logs{t: t}
	skip := true
	mopts := manager.Options{
		Scheme:     e.Scheme,
		Logger:     logr.New(logs),
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Cache:      cache.Options{DefaultNamespaces: map[string]cache.Config{namespace: {}}},
		Controller: config.Controller{SkipNameValidation: &skip},
	}
	for _, tweak := range tweaks {
		tweak(&mopts)
	}
	mgr, err := manager.New(cfg, mopts)
	if err != nil {
		t.Fatalf("create a manager: %v", err)
	}
	if opts.Namespaces == nil && namespace != "" { // an empty, non-nil list serves the whole cluster
		opts.Namespaces = []string{namespace}
	}
	if err := handlers.SetupWithManager(mgr, reg, opts); err != nil {
		t.Fatalf("set up the handlers: %v", err)
	}
	return &Operator{Logs: logs, Manager: mgr}
}

// Start starts the manager; it is stopped when the test ends.
func (o *Operator) Start(t testing.TB) {
	ctx, cancel := context.WithCancel(context.Background())
	o.cancel, o.done = cancel, make(chan error, 1)
	go func() { o.done <- o.Manager.Start(ctx) }()
	t.Cleanup(func() { o.Stop(t) })
}

// Stop stops the manager and waits until it has returned. It is safe to
// call more than once.
func (o *Operator) Stop(t testing.TB) {
	t.Helper()
	if o.cancel == nil {
		return
	}
	o.cancel()
	o.cancel = nil
	select {
	case err := <-o.done:
		if err != nil {
			t.Errorf("the operator failed: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Errorf("the operator did not stop within 30 s")
	}
	o.Logs.mu.Lock()
	o.Logs.closed = true
	o.Logs.mu.Unlock()
}

// Exited waits until the manager returns by itself (e.g. after a failed
// start) and returns its error; it fails the test if that takes more than
// 30 s.
func (o *Operator) Exited(t testing.TB) error {
	t.Helper()
	select {
	case err := <-o.done:
		o.cancel()
		o.cancel = nil
		return err
	case <-time.After(30 * time.Second):
		t.Fatalf("the operator did not exit by itself within 30 s")
		return nil
	}
}

// WaitForLog waits until the operator has logged the message (exactly)
// at least once, and fails the test if it has not within the timeout.
func (o *Operator) WaitForLog(t testing.TB, message string, timeout time.Duration) {
	t.Helper()
	Eventually(t, fmt.Sprintf("the log line %q", message), timeout, func() bool { return o.Logs.Count(message) > 0 })
}

// WaitForLogAbout waits until the operator has logged the message
// (exactly) about the object with the given name.
func (o *Operator) WaitForLogAbout(t testing.TB, name, message string, timeout time.Duration) {
	t.Helper()
	Eventually(t, fmt.Sprintf("the log line %q about %s", message, name), timeout, func() bool {
		return slices.Contains(o.Logs.About(name), message)
	})
}
