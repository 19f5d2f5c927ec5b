// Package panics runs an operator whose callbacks panic, each kind of
// callback for objects of its own, as a process against one envtest
// control plane, and sees from outside what kopf-go promises: the
// operator goes on serving the other objects, the log line names the
// handler and carries the panic's stack, and /metrics counts the panic
// (docs/handlers.md, "When a callback panics").
package panics

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
	// binary is the suite's operator (test/panics/operator), built once.
	binary string
)

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, "panics", []string{testenv.ExampleCRD()}, func(f *testenv.Fixture) error {
		env, kubeconfig = f.Env, f.Kubeconfig
		binary = filepath.Join(f.Dir, "operator")
		return testenv.Build(binary, "./test/panics/operator")
	}))
}
