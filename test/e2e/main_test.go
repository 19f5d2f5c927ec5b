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
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kopf-go/kopf/test/testenv"
)

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
	// The peering CRDs are there, as in a cluster with peering; the
	// examples run standalone, so they must not matter.
	env, err = testenv.Start(append([]string{testenv.ExampleCRD()}, testenv.PeeringCRDs()...)...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := 1
	if kubeconfig, err = env.KubeconfigFile(tmp); err != nil {
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

// buildExamples builds every example (each directory of examples/ with a
// main.go) and the kopf command into dir, in one go build.
func buildExamples(dir string) error {
	mains, err := filepath.Glob(filepath.Join(testenv.Root(), "examples", "*", "main.go"))
	if err != nil {
		return err
	}
	args := []string{"build", "-o", dir + string(filepath.Separator), "./cmd/kopf"}
	for _, main := range mains {
		args = append(args, "./examples/"+filepath.Base(filepath.Dir(main)))
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = testenv.Root()
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build the examples: %w\n%s", err, out)
	}
	return nil
}
