// Package conversion tests the managed spec.conversion of CRDs
// (internal/conversion/managed, docs/conversion.md) against a real
// kube-apiserver and etcd (envtest), one control plane for the package.
// The conversion webhook is never called: nothing here reads objects in
// another version than the stored one, so its URL need not be served.
package conversion

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/kopf-go/kopf/pkg/kopftest"
	"github.com/kopf-go/kopf/test/testenv"
)

var env *kopftest.Env

// exampleCRD is the CRD of examples/19-conversion: the tests copy it under
// kinds of their own, and the RBAC test uses it as it is, since the
// shipped ClusterRole names it.
var exampleCRD = filepath.Join(testenv.Root(), "examples", "19-conversion", "crd.yaml")

func TestMain(m *testing.M) {
	// client-go streams an informer's first listing in a watch where the
	// API server can (this one can), and lists otherwise (older API
	// servers, or WatchList turned off). The watches here take the listing
	// path, which needs list and watch, so that TestShippedRBAC checks the
	// rights of both; streaming needs watch alone, a subset.
	if err := os.Setenv("KUBE_FEATURE_WatchListClient", "false"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	kopftest.Main(m, kopftest.Options{CRDs: []string{exampleCRD}}, &env)
}
