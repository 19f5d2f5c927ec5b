// Package kopftest is a toolkit for testing operators built with kopf-go,
// in the spirit of Kopf's KopfRunner: it starts a real control plane
// (envtest's kube-apiserver and etcd, built from source on first use),
// installs CRDs, runs a registry's handlers in-process in a manager of
// their own, captures their log lines, and waits for their outcomes.
//
// One control plane per test binary is the intended use:
//
//	var env *kopftest.Env
//
//	func TestMain(m *testing.M) {
//		kopftest.Main(m, kopftest.Options{CRDs: []string{"../../config/crd/bases"}, Scheme: scheme}, &env)
//	}
//
// and in each test a namespace and an operator of its own:
//
//	ns := env.Namespace(t)
//	op := env.StartOperator(t, ns, registry, handlers.Options{})
//	... create an object in ns ...
//	op.WaitForLog(t, "Handler 'create_fn' succeeded.", 30*time.Second)
package kopftest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kopf-go/kopf/internal/await"
	"github.com/kopf-go/kopf/internal/envtestbin"
)

// Options say what the control plane needs.
type Options struct {
	// CRDs are CRD files or directories of them, installed before Start
	// returns; a missing path is an error.
	CRDs []string
	// Scheme knows the operator's types; it serves Env.Client and the
	// managers of StartOperator. Default: client-go's scheme.Scheme.
	Scheme *runtime.Scheme
	// Assets is the directory of kube-apiserver and etcd. Default:
	// $KUBEBUILDER_ASSETS if set, else Assets().
	Assets string
	// APIServerFlags are set on kube-apiserver's command line besides
	// envtest's own, by name without the dashes: {"feature-gates":
	// "SomeGate=false"}, say. A name envtest sets too is replaced.
	APIServerFlags map[string]string
}

// Env is a running control plane.
type Env struct {
	// Config connects as an administrator.
	Config *rest.Config
	// Client reads and writes directly (no cache), with Options.Scheme.
	Client client.Client
	// Scheme is Options.Scheme (or its default).
	Scheme *runtime.Scheme
	env    *envtest.Environment
}

// Start starts a control plane and installs the CRDs.
func Start(opts Options) (*Env, error) {
	assets := opts.Assets
	if assets == "" {
		var err error
		if assets, err = Assets(); err != nil {
			return nil, err
		}
	}
	s := opts.Scheme
	if s == nil {
		s = scheme.Scheme
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     opts.CRDs,
		ErrorIfCRDPathMissing: true,
	}
	args := env.ControlPlane.GetAPIServer().Configure()
	for name, value := range opts.APIServerFlags {
		args.Set(name, value)
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("start the control plane (binaries from %s): %w", assets, err)
	}
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		_ = env.Stop()
		return nil, fmt.Errorf("create a client: %w", err)
	}
	return &Env{Config: cfg, Client: c, Scheme: s, env: env}, nil
}

// Stop stops the control plane.
func (e *Env) Stop() error { return e.env.Stop() }

// Environment is the underlying envtest environment, e.g. for AddUser.
func (e *Env) Environment() *envtest.Environment { return e.env }

// Assets returns the directory of kube-apiserver and etcd: that of
// $KUBEBUILDER_ASSETS if set, else the one the library's build script
// fills (once, which takes minutes; cached in
// $XDG_DATA_HOME/kubebuilder-envtest afterwards). The script builds the
// binaries from source through the Go module proxy; ENVTEST_K8S_VERSION
// and ENVTEST_ETCD_VERSION choose other versions.
func Assets() (string, error) {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir, nil
	}
	// The module cache keeps no execute bits: run the embedded copy with
	// bash.
	script, err := os.CreateTemp("", "envtest-binaries-*.sh")
	if err != nil {
		return "", err
	}
	defer func() { _ = os.Remove(script.Name()) }()
	if _, err := script.Write(envtestbin.Script); err != nil {
		_ = script.Close()
		return "", err
	}
	if err := script.Close(); err != nil {
		return "", err
	}
	cmd := exec.Command("bash", script.Name())
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("build the envtest binaries: %w", err)
	}
	dir := strings.TrimSpace(string(out))
	if _, err := os.Stat(filepath.Join(dir, "kube-apiserver")); err != nil {
		return "", fmt.Errorf("the envtest binaries are not in %q: %w", dir, err)
	}
	return dir, nil
}

// Namespace creates a namespace for one test, named after it, and deletes
// it when the test ends.
func (e *Env) Namespace(t testing.TB) string {
	t.Helper()
	// A namespace's name is a DNS label: subtests' names may have any
	// character.
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, strings.ToLower(t.Name()))
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

// Eventually polls cond until it holds (at once, then at growing
// intervals up to 20 ms), and fails the test (naming what was awaited) if
// it does not within the timeout.
func Eventually(t testing.TB, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	await.True(t, what, timeout, cond)
}

// KubeconfigFile writes a kubeconfig for an administrator of the control
// plane into dir and returns its path: for operators run as processes, or
// for kubectl while debugging a test.
func (e *Env) KubeconfigFile(dir string) (string, error) { return WriteKubeconfig(e.env, dir) }

// WriteKubeconfig writes a kubeconfig for an administrator (a user of its
// own, in system:masters) of any running envtest control plane into dir
// and returns its path.
func WriteKubeconfig(env *envtest.Environment, dir string) (string, error) {
	user, err := env.AddUser(envtest.User{Name: "kopf-go-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return "", fmt.Errorf("add a user: %w", err)
	}
	data, err := user.KubeConfig()
	if err != nil {
		return "", fmt.Errorf("render the kubeconfig: %w", err)
	}
	path := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return "", fmt.Errorf("write the kubeconfig: %w", err)
	}
	return path, nil
}

// NoLeaks fails the test if, when it ends, goroutines are running that
// were not running when NoLeaks was called: call it first in a test, before
// StartOperator, whose stop (a cleanup registered later) then runs before
// the check. The HTTP connections the clients keep alive are not counted,
// nor the two goroutines that controller-runtime starts for an informer
// of a cache of several namespaces, and for an event handler registered
// on it: each waits for every namespace's informer to sync, and one that
// was stopped before it synced never does, so they outlive the cache
// (controller-runtime v0.25, multi_namespace_cache.go); nothing of the
// engine's can end them. (A ring member's adoption caches, started and
// stopped as members die, meet it more often than a run's cache.)
func NoLeaks(t testing.TB) {
	t.Helper()
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() {
		if err := goleak.Find(ignore,
			goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
			goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
			goleak.IgnoreAnyFunction("net/http.(*http2ClientConn).readLoop"),
			goleak.IgnoreAnyFunction("golang.org/x/net/http2.(*ClientConn).readLoop"),
			goleak.IgnoreTopFunction("sigs.k8s.io/controller-runtime/pkg/cache.newMultiNamespaceInformerHandlerRegistration.func1"),
			goleak.IgnoreTopFunction("sigs.k8s.io/controller-runtime/pkg/cache.newMultiNamespaceInformer.func1")); err != nil {
			t.Error(err)
		}
	})
}

// Main is a test binary's TestMain in one call: it starts a control plane
// with the options, stores it in *env, runs the tests, stops the control
// plane, and exits with the tests' code (1 if the control plane fails to
// start or to stop):
//
//	var env *kopftest.Env
//
//	func TestMain(m *testing.M) { kopftest.Main(m, kopftest.Options{CRDs: crds}, &env) }
//
// controller-runtime's global logger is set to discard: envtest logs
// through it, and the operators of StartOperator log into their own Logs.
func Main(m *testing.M, opts Options, env **Env) {
	os.Exit(run(m, opts, env))
}

func run(m *testing.M, opts Options, env **Env) int {
	ctrllog.SetLogger(logr.Discard())
	e, err := Start(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	*env = e
	code := m.Run()
	if err := e.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stop the control plane:", err)
		code = max(code, 1)
	}
	return code
}
