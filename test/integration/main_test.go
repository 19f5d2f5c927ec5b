// Package integration tests the engine against a real kube-apiserver and
// etcd (envtest), one control plane for the whole package.
package integration

import (
	"testing"

	"github.com/kopf-go/kopf/pkg/kopftest"
	"github.com/kopf-go/kopf/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	kopftest.Main(m, kopftest.Options{CRDs: append(testenv.PeeringCRDs(), testenv.ExampleCRD(), "testdata/clusterkopfexamples.yaml")}, &env)
}
