package testenv

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	if opts.Namespaces == nil { // an empty, non-nil list serves the whole cluster
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

// Namespace creates a namespace for one test, named after it, and deletes
// it when the test ends.
func (e *Env) Namespace(t testing.TB) string {
	t.Helper()
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if len(name) > 50 {
		name = name[:50]
	}
	name = strings.Trim(name, "-") + fmt.Sprintf("-%d", time.Now().UnixNano()%100000)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := e.Client.Create(context.Background(), ns); err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	t.Cleanup(func() { _ = e.Client.Delete(context.Background(), ns) })
	return name
}

// Logs captures an operator's log lines (and echoes them into the test's
// log, shown on failure or with -v).
type Logs struct {
	t       testing.TB
	mu      sync.Mutex
	entries []Entry
	closed  bool
}

// Entry is one log line.
type Entry struct {
	Level   int
	Error   bool
	Message string
	Values  []any
}

func (l *Logs) Init(logr.RuntimeInfo)  {}
func (l *Logs) Enabled(level int) bool { return level <= 1 }

func (l *Logs) Info(level int, msg string, kv ...any) {
	l.add(Entry{Level: level, Message: msg, Values: kv})
}

func (l *Logs) Error(err error, msg string, kv ...any) {
	if err != nil {
		kv = append(kv, "error", err.Error())
	}
	l.add(Entry{Error: true, Message: msg, Values: kv})
}

func (l *Logs) WithValues(kv ...any) logr.LogSink {
	return &childLogs{root: l, values: kv}
}

func (l *Logs) WithName(name string) logr.LogSink { return &childLogs{root: l} }

func (l *Logs) add(e Entry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entries = append(l.entries, e)
	if !l.closed {
		l.t.Logf("%s %v", e.Message, e.Values)
	}
}

// Messages returns the messages logged so far that contain the substring.
func (l *Logs) Messages(substring string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, e := range l.entries {
		if strings.Contains(e.Message, substring) {
			out = append(out, e.Message)
		}
	}
	return out
}

// About returns the messages logged about the object with the given name
// (those carrying it as their "name" value).
func (l *Logs) About(name string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, e := range l.entries {
		for i := 0; i+1 < len(e.Values); i += 2 {
			if e.Values[i] == "name" && e.Values[i+1] == name {
				out = append(out, e.Message)
			}
		}
	}
	return out
}

// Count returns how many messages equal the given one exactly.
func (l *Logs) Count(message string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, e := range l.entries {
		if e.Message == message {
			n++
		}
	}
	return n
}

// childLogs carries values added with WithValues into the root's entries.
type childLogs struct {
	root   *Logs
	values []any
}

func (c *childLogs) Init(logr.RuntimeInfo)  {}
func (c *childLogs) Enabled(level int) bool { return level <= 1 }
func (c *childLogs) Info(level int, msg string, kv ...any) {
	c.root.Info(level, msg, append(append([]any{}, c.values...), kv...)...)
}
func (c *childLogs) Error(err error, msg string, kv ...any) {
	c.root.Error(err, msg, append(append([]any{}, c.values...), kv...)...)
}
func (c *childLogs) WithValues(kv ...any) logr.LogSink {
	return &childLogs{root: c.root, values: append(append([]any{}, c.values...), kv...)}
}
func (c *childLogs) WithName(string) logr.LogSink { return c }
