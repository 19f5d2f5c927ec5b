// Package integration tests the engine against a real kube-apiserver and
// etcd (envtest), one control plane for the whole package.
package integration

import (
	"fmt"
	"os"
	"testing"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kopf-go/kopf/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	// Each operator logs through its own logger; client-go's background
	// machinery logs nowhere.
	ctrllog.SetLogger(logr.Discard())
	var err error
	env, err = testenv.Start(append(testenv.PeeringCRDs(), testenv.ExampleCRD(), "testdata/clusterkopfexamples.yaml")...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}
