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
// the test ends. The options adjust how: another connection
// (WithConfig), the manager's options (WithManagerOptions), more work in
// the manager before it starts (BeforeStart).
func (e *Env) StartOperator(t testing.TB, namespace string, reg *handlers.Registry, opts handlers.Options, options ...OperatorOption) *Operator {
	t.Helper()
	setup := operatorSetup{config: e.Config}
	for _, o := range options {
		o(&setup)
	}
	logs := &Logs{t: t}
	skip := true
	mopts := manager.Options{
		Scheme:     e.Scheme,
		Logger:     logr.New(logs),
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Cache:      cache.Options{DefaultNamespaces: map[string]cache.Config{namespace: {}}},
		Controller: config.Controller{SkipNameValidation: &skip},
	}
	for _, tweak := range setup.tweaks {
		tweak(&mopts)
	}
	mgr, err := manager.New(setup.config, mopts)
	if err != nil {
		t.Fatalf("create a manager: %v", err)
	}
	if opts.Namespaces == nil && namespace != "" { // an empty, non-nil list serves the whole cluster
		opts.Namespaces = []string{namespace}
	}
	if err := handlers.SetupWithManager(mgr, reg, opts); err != nil {
		t.Fatalf("set up the handlers: %v", err)
	}
	for _, before := range setup.before {
		if err := before(mgr); err != nil {
			t.Fatalf("prepare the manager: %v", err)
		}
	}
	op := &Operator{Logs: logs, Manager: mgr}
	op.start(t)
	return op
}

// An OperatorOption adjusts how StartOperator makes the operator.
type OperatorOption func(*operatorSetup)

// operatorSetup is what the options set.
type operatorSetup struct {
	config *rest.Config
	tweaks []func(*manager.Options)
	before []func(manager.Manager) error
}

// WithConfig connects the operator with cfg instead of the Env's Config
// (e.g. with an instrumented transport, or as another user).
func WithConfig(cfg *rest.Config) OperatorOption {
	return func(s *operatorSetup) { s.config = cfg }
}

// WithManagerOptions lets fn adjust the manager's options, e.g. to wrap
// its client or serve its health probes.
func WithManagerOptions(fn func(*manager.Options)) OperatorOption {
	return func(s *operatorSetup) { s.tweaks = append(s.tweaks, fn) }
}

// BeforeStart runs fn on the manager after the handlers are set up and
// before it starts, e.g. to add a controller of the test's own beside
// the engine; an error fails the test.
func BeforeStart(fn func(manager.Manager) error) OperatorOption {
	return func(s *operatorSetup) { s.before = append(s.before, fn) }
}

// start starts the manager; it is stopped when the test ends.
func (o *Operator) start(t testing.TB) {
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
