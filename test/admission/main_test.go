// Package admission runs validating and mutating handlers behind a real API
// server: envtest's kube-apiserver calls the manager's webhook server
// through the webhook configurations that the operator manages itself.
package admission

import (
	"fmt"
	"os"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kopf-go/kopf/test/testenv"
)

var (
	env *envtest.Environment
	cfg *rest.Config
	k8s client.Client
)

// TestMain starts a control plane whose webhook options make serving
// certificates (and a CA for the configurations) and pick a local port.
// testenv.Start has no place for them, so the environment is built here.
func TestMain(m *testing.M) {
	ctrllog.SetLogger(logr.Discard())
	assets, err := testenv.Assets()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	env = &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     []string{testenv.ExampleCRD(), testenv.ConversionCRD()},
		ErrorIfCRDPathMissing: true,
		WebhookInstallOptions: envtest.WebhookInstallOptions{},
	}
	cfg, err = env.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "start the control plane:", err)
		os.Exit(1)
	}
	k8s, err = client.New(cfg, client.Options{})
	code := 1
	if err != nil {
		fmt.Fprintln(os.Stderr, "create a client:", err)
	} else {
		code = m.Run()
	}
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}
