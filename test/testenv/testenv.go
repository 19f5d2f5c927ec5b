// Package testenv is this repository's side of pkg/kopftest: the paths of
// the CRDs its tests install, and operators run as child processes. The
// control plane and in-process operators are kopftest's, which operator
// authors use the same way.
package testenv

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kopf-go/kopf/pkg/kopftest"
)

type (
	// Env is a running control plane.
	Env = kopftest.Env
	// Operator is an engine running in-process in a manager of its own.
	Operator = kopftest.Operator
	// Logs are an in-process operator's captured log lines.
	Logs = kopftest.Logs
)

// Root is the repository's root directory.
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Assets returns the directory with kube-apiserver and etcd (see
// kopftest.Assets).
func Assets() (string, error) { return kopftest.Assets() }

// Start starts a control plane with the given CRD files installed, with
// client-go's scheme.
func Start(crds ...string) (*Env, error) { return kopftest.Start(kopftest.Options{CRDs: crds}) }

// PeeringCRDs are the paths of the peering CRDs.
func PeeringCRDs() []string {
	return []string{
		filepath.Join(Root(), "config", "crd", "kopfpeerings.yaml"),
		filepath.Join(Root(), "config", "crd", "clusterkopfpeerings.yaml"),
	}
}

// ExampleCRD is the path of the KopfExample CRD.
func ExampleCRD() string { return filepath.Join(Root(), "examples", "crd.yaml") }

// ConversionCRD is the path of examples/19-conversion's CRD
// (ConversionExample: v1 with spec.field, v2 with spec.value, stored as
// v2), without a spec.conversion: an operator with its converters and
// WebhookOptions.Managed writes one.
func ConversionCRD() string { return filepath.Join(Root(), "examples", "19-conversion", "crd.yaml") }

// FreeAddress returns a local address (127.0.0.1:port) whose port is free
// now, for a server of the test's to listen on.
func FreeAddress(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().String()
}

// Create creates the objects with c, and deletes them when the test ends.
func Create(t testing.TB, c client.Client, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := c.Create(context.Background(), o); err != nil {
			t.Fatalf("create %s: %v", o.GetName(), err)
		}
		t.Cleanup(func() { _ = c.Delete(context.Background(), o) })
	}
}

// Fixture is what Main sets up for a test binary: a temporary directory
// (removed afterwards), a control plane and a kubeconfig file for it, for
// operators run as processes.
type Fixture struct {
	Dir        string
	Env        *Env
	Kubeconfig string
}

// Main is a TestMain's body for a test binary with one control plane: it
// starts the control plane with crds, hands the fixture to setup (which
// keeps what the tests need and may build binaries into its Dir), runs the
// tests, and stops everything. It returns the exit code; a failing setup
// or stop fails the run.
func Main(m *testing.M, name string, crds []string, setup func(*Fixture) error) int {
	// envtest logs through controller-runtime's logger; the tests report
	// what they see themselves.
	ctrllog.SetLogger(logr.Discard())
	dir, err := os.MkdirTemp("", "kopf-"+name+"-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = os.RemoveAll(dir) }()
	env, err := Start(crds...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := 1
	f := &Fixture{Dir: dir, Env: env}
	if f.Kubeconfig, err = env.KubeconfigFile(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
	} else if err := setup(f); err != nil {
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
