// Package testenv is this repository's side of pkg/kopftest: the paths of
// the CRDs its tests install, and operators run as child processes. The
// control plane and in-process operators are kopftest's, which operator
// authors use the same way.
package testenv

import (
	"net"
	"path/filepath"
	"runtime"
	"testing"

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
