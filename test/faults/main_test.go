// Package faults is the fault suite of sharding: replicas of a probe
// operator run as processes, each behind a proxy of its own, while
// nemeses cut them off, kill, pause and stop them, delete their Leases
// and move their objects by hand, and a driver changes objects all along.
// Afterwards the checker reads what every process recorded and finds any
// moment at which two of them were active on one object.
//
// TestFaults, in make test, injects each fault once at the library's
// default durations. TestChaos (build tag chaos, make chaos) injects
// random, overlapping faults for as long as asked.
package faults

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

// fixtures are the package's control plane and probe binary.
var fixtures struct {
	env *testenv.Env
	// kubeconfig connects directly, for the driver and the nemeses; each
	// replica gets a copy that points at its proxy.
	kubeconfig string
	// probe is the built probe operator.
	probe string
	tmp   string
}

func TestMain(m *testing.M) { os.Exit(runMain(m)) }

// runMain starts the control plane with the example CRD and the peering
// CRDs (the second ring's peering needs them), builds the probe, runs
// the tests, and tears everything down; it returns the exit code.
func runMain(m *testing.M) int {
	ctrllog.SetLogger(logr.Discard())
	tmp, err := os.MkdirTemp("", "kopf-faults-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	fixtures.tmp = tmp
	fixtures.probe = filepath.Join(tmp, "probe")
	build := exec.Command("go", "build", "-o", fixtures.probe, "./test/faults/probe")
	build.Dir = testenv.Root()
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build the probe: %v\n%s", err, out)
		return 1
	}
	env, err := testenv.Start(append([]string{testenv.ExampleCRD()}, testenv.PeeringCRDs()...)...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fixtures.env = env
	code := 1
	if fixtures.kubeconfig, err = env.KubeconfigFile(tmp); err != nil {
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
