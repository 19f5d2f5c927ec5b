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
	"os"
	"path/filepath"
	"testing"

	"github.com/kopf-go/kopf/test/testenv"
)

// fixtures are the package's control plane and probe binary.
var fixtures struct {
	env *testenv.Env
	// kubeconfig connects directly; each replica gets a kubeconfig of its
	// own, for its proxies and with their CA (writeProxyKubeconfig).
	kubeconfig string
	// probe is the built probe operator.
	probe string
}

// TestMain runs the tests against one control plane with the example CRD,
// the probe's Incarnation CRD (the name-reused nemesis's kind) and the
// peering CRDs (the second ring's peering needs them), with the probe
// built.
func TestMain(m *testing.M) {
	crds := append([]string{testenv.ExampleCRD(), incarnationCRD()}, testenv.PeeringCRDs()...)
	os.Exit(testenv.Main(m, "faults", crds, func(f *testenv.Fixture) error {
		fixtures.env, fixtures.kubeconfig = f.Env, f.Kubeconfig
		fixtures.probe = filepath.Join(f.Dir, "probe")
		return testenv.Build(fixtures.probe, "./test/faults/probe")
	}))
}

// incarnationCRD is the path of the probe's Incarnation CRD.
func incarnationCRD() string {
	return filepath.Join(testenv.Root(), "test", "faults", "probe", "incarnations.yaml")
}
