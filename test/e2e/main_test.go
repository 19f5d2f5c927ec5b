// Package e2e runs the examples as operator processes against one envtest
// control plane, as Kopf's e2e test runs its examples with `kopf run`:
// create the example object, let the handlers work, delete it, stop the
// operator with SIGTERM, and check its output.
package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kopf-go/kopf/test/testenv"
)

// examples are the example packages this package builds and runs.
var examples = []string{"01-minimal", "03-exceptions", "05-handlers"}

var (
	// env is the one control plane of the package.
	env *testenv.Env
	// kubeconfig is a kubeconfig file for env, for the operator processes.
	kubeconfig string
	// binDir holds the examples' binaries, one per example name.
	binDir string
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

// runMain sets up the package's fixtures, runs the tests, and tears the
// fixtures down again; it returns the exit code.
func runMain(m *testing.M) int {
	// envtest logs through controller-runtime's logger; the tests log the
	// operators' output instead.
	ctrllog.SetLogger(logr.Discard())
	tmp, err := os.MkdirTemp("", "kopf-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	binDir = filepath.Join(tmp, "bin")
	if err := buildExamples(binDir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	env, err = testenv.Start(testenv.ExampleCRD())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := 1
	kubeconfig = filepath.Join(tmp, "kubeconfig")
	if err := writeKubeconfig(env.Config, kubeconfig); err != nil {
		fmt.Fprintln(os.Stderr, err)
	} else {
		code = m.Run()
	}
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, fmt.Errorf("stop the control plane: %w", err))
		code = 1
	}
	return code
}

// buildExamples builds every example once, in one go build, into dir.
func buildExamples(dir string) error {
	args := []string{"build", "-o", dir + string(filepath.Separator)}
	for _, name := range examples {
		args = append(args, "./examples/"+name)
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = testenv.Root()
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build the examples: %w\n%s", err, out)
	}
	return nil
}

// writeKubeconfig writes a kubeconfig file with the control plane's
// address and its admin user's client certificate.
func writeKubeconfig(cfg *rest.Config, path string) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["envtest"] = &clientcmdapi.AuthInfo{
		ClientCertificateData: cfg.CertData,
		ClientKeyData:         cfg.KeyData,
		Token:                 cfg.BearerToken,
	}
	kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "envtest"}
	kc.CurrentContext = "envtest"
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return fmt.Errorf("write the kubeconfig: %w", err)
	}
	return nil
}
