package bench

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kopf-go/kopf/pkg/kopftest"
	"github.com/kopf-go/kopf/test/bench/internal/kex"
	"github.com/kopf-go/kopf/test/testenv"
)

// fixtures are what the operator workloads share: one control plane, a
// kubeconfig for the operator processes, and the operator's binary. They
// are made on first use, so that the daemon benchmarks, which need none
// of them, do not wait for them.
var fixtures struct {
	once       sync.Once
	err        error
	tmp        string
	env        *testenv.Env
	kubeconfig string
	operator   string
}

// keepLogs, if set, is a directory where every operator run's log and
// output are kept at the end, to see where a workload's time went.
var keepLogs = flag.String("keep-logs", "", "keep every operator run's log and output in this directory at the end")

// consistencyChecks keeps the API server's check of its watch cache
// against etcd (the feature gate DetectCacheInconsistency, on by default
// since Kubernetes 1.34). Every 5 to 7.5 minutes it lists every object of
// every resource from etcd and from the cache: at 100,000 objects, about
// 12 s of the API server's CPU, which on this machine lands on the cores
// of the operators under measurement at random moments. On a cluster the
// control plane has cores of its own; so the benchmarks turn it off unless
// asked (docs/benchmarks.md, "Machine").
var consistencyChecks = flag.Bool("apiserver-consistency-checks", false, "keep the API server's periodic check of its watch cache against etcd (DetectCacheInconsistency), off by default")

func TestMain(m *testing.M) {
	// envtest logs through controller-runtime's logger.
	ctrllog.SetLogger(logr.Discard())
	code := m.Run()
	if *keepLogs != "" && fixtures.tmp != "" {
		if err := copyLogs(fixtures.tmp, *keepLogs); err != nil {
			fmt.Fprintln(os.Stderr, fmt.Errorf("keep the operators' logs: %w", err))
		}
	}
	if fixtures.env != nil {
		if err := fixtures.env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, fmt.Errorf("stop the control plane: %w", err))
			code = 1
		}
	}
	if fixtures.tmp != "" {
		_ = os.RemoveAll(fixtures.tmp)
	}
	os.Exit(code)
}

// copyLogs copies the *.log files of from into to.
func copyLogs(from, to string) error {
	if err := os.MkdirAll(to, 0o755); err != nil {
		return err
	}
	logs, err := filepath.Glob(filepath.Join(from, "*.log"))
	if err != nil {
		return err
	}
	for _, log := range logs {
		data, err := os.ReadFile(log)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(to, filepath.Base(log)), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// setup makes the fixtures once, or fails the test.
func setup(tb testing.TB) {
	tb.Helper()
	fixtures.once.Do(func() { fixtures.err = makeFixtures() })
	if fixtures.err != nil {
		tb.Fatal(fixtures.err)
	}
}

func makeFixtures() error {
	tmp, err := os.MkdirTemp("", "kopf-bench-")
	if err != nil {
		return err
	}
	fixtures.tmp = tmp
	fixtures.operator = filepath.Join(tmp, "operator")
	if err := testenv.Build(fixtures.operator, "./test/bench/operator"); err != nil {
		return err
	}
	opts := kopftest.Options{CRDs: []string{testenv.ExampleCRD(), testenv.ConversionCRD()}}
	if !*consistencyChecks {
		opts.APIServerFlags = map[string]string{"feature-gates": "DetectCacheInconsistency=false"}
	}
	if fixtures.env, err = kopftest.Start(opts); err != nil {
		return err
	}
	if on, err := featureEnabled(fixtures.env.Config, "DetectCacheInconsistency"); err != nil {
		return err
	} else if on != *consistencyChecks {
		return fmt.Errorf("the API server's DetectCacheInconsistency is %t, want %t (-apiserver-consistency-checks)", on, *consistencyChecks)
	}
	if fixtures.kubeconfig, err = fixtures.env.KubeconfigFile(tmp); err != nil {
		return err
	}
	return warmUp()
}

// featureEnabled reads whether the API server has the feature gate on, from
// its metrics (kubernetes_feature_enabled).
func featureEnabled(cfg *rest.Config, gate string) (bool, error) {
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return false, err
	}
	resp, err := httpClient.Get(strings.TrimSuffix(cfg.Host, "/") + "/metrics")
	if err != nil {
		return false, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("the API server's metrics: %s", resp.Status)
	}
	prefix := fmt.Sprintf(`kubernetes_feature_enabled{name=%q,`, gate)
	lines := bufio.NewScanner(resp.Body)
	lines.Buffer(nil, 1<<20)
	for lines.Scan() {
		if line, ok := strings.CutPrefix(lines.Text(), prefix); ok {
			return strings.HasSuffix(line, " 1"), nil
		}
	}
	if err := lines.Err(); err != nil {
		return false, err
	}
	return false, fmt.Errorf("the API server's metrics do not say whether %s is enabled", gate)
}

// warmUp creates and deletes one object: the API server's first request
// for a new resource is seconds slower than the rest, and that belongs to
// no variant.
func warmUp() error {
	ctx := context.Background()
	s, err := schemeOnce()
	if err != nil {
		return err
	}
	c, err := client.New(driverConfig(), client.Options{Scheme: s})
	if err != nil {
		return err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "warm-up"}}
	if err := c.Create(ctx, ns); err != nil {
		return fmt.Errorf("warm up: %w", err)
	}
	obj := kex.New(ns.Name, 0)
	if err := c.Create(ctx, obj); err != nil {
		return fmt.Errorf("warm up: %w", err)
	}
	if err := c.Delete(ctx, obj); err != nil {
		return fmt.Errorf("warm up: %w", err)
	}
	return c.Delete(ctx, ns)
}

// driverConfig is the control plane's connection for the driver's own
// clients: unthrottled, as the operators' are.
func driverConfig() *rest.Config {
	cfg := rest.CopyConfig(fixtures.env.Config)
	cfg.QPS = -1
	return cfg
}

// schemeOnce is the driver's scheme: the built-in kinds and KopfExample.
var schemeOnce = sync.OnceValues(func() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, err
	}
	return s, kex.AddToScheme(s)
})

func scheme(tb testing.TB) *runtime.Scheme {
	tb.Helper()
	s, err := schemeOnce()
	if err != nil {
		tb.Fatal(err)
	}
	return s
}
