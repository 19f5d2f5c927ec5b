// Package posting tests Kubernetes Events from handlers against a real
// kube-apiserver and etcd (envtest), one control plane for the package:
// the Event bodies Kopf posts, the cuts and drops, and the gates.
package posting

import (
	"testing"

	"github.com/kopf-go/kopf/pkg/kopftest"
	"github.com/kopf-go/kopf/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	kopftest.Main(m, kopftest.Options{CRDs: []string{testenv.ExampleCRD()}}, &env)
}
