// Package tracing runs operators with tracing on behind a real API
// server: in-process with a TracerProvider of the test's, and as a
// process exporting over OTLP/HTTP to a receiver of the test's.
package tracing

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kopf-go/kopf/pkg/kopftest"
	"github.com/kopf-go/kopf/test/testenv"
)

var (
	env        *envtest.Environment
	cfg        *rest.Config
	k8s        client.Client
	kubeconfig string
	operator   string // the path of the operator's binary (./operator)
)

// TestMain starts a control plane with webhook serving options (for the
// reviews' spans), writes a kubeconfig and builds the operator's binary
// for the process tests.
func TestMain(m *testing.M) {
	ctrllog.SetLogger(logr.Discard())
	os.Exit(run(m))
}

func run(m *testing.M) int {
	assets, err := testenv.Assets()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	dir, err := os.MkdirTemp("", "kopf-tracing-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = os.RemoveAll(dir) }()
	operator = filepath.Join(dir, "operator")
	build := exec.Command("go", "build", "-o", operator, "./operator")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build the operator: %v\n%s", err, out)
		return 1
	}
	env = &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     []string{testenv.ExampleCRD()},
		ErrorIfCRDPathMissing: true,
		WebhookInstallOptions: envtest.WebhookInstallOptions{},
	}
	if cfg, err = env.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "start the control plane:", err)
		return 1
	}
	code := 1
	if k8s, err = client.New(cfg, client.Options{}); err != nil {
		fmt.Fprintln(os.Stderr, "create a client:", err)
	} else if kubeconfig, err = kopftest.WriteKubeconfig(env, dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
	} else {
		code = m.Run()
	}
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	return code
}
