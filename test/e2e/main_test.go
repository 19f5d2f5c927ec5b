// Package e2e runs the examples as operator processes against one envtest
// control plane, as Kopf's e2e test runs its examples with `kopf run`:
// create the example object, let the handlers work, delete it, stop the
// operator with SIGTERM, and check its output.
package e2e

import (
	"os"
	"path/filepath"
	"testing"

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

// TestMain builds the examples and runs the tests against one control
// plane. The peering CRDs are there, as in a cluster with peering; the
// examples run standalone, so they must not matter.
func TestMain(m *testing.M) {
	crds := append([]string{testenv.ExampleCRD(), conversionExampleCRD()}, testenv.PeeringCRDs()...)
	os.Exit(testenv.Main(m, "e2e", crds, func(f *testenv.Fixture) error {
		env, kubeconfig = f.Env, f.Kubeconfig
		binDir = filepath.Join(f.Dir, "bin")
		return buildExamples(binDir)
	}))
}

// buildExamples builds every example (each directory of examples/ with a
// main.go), the kopf command and the probe operator into dir, in one go
// build.
func buildExamples(dir string) error {
	mains, err := filepath.Glob(filepath.Join(testenv.Root(), "examples", "*", "main.go"))
	if err != nil {
		return err
	}
	// The fault suite's probe operator too: a daemon that records every
	// beat (discovery_test.go).
	pkgs := []string{"./cmd/kopf", "./test/faults/probe"}
	for _, main := range mains {
		pkgs = append(pkgs, "./examples/"+filepath.Base(filepath.Dir(main)))
	}
	return testenv.Build(dir+string(filepath.Separator), pkgs...)
}
