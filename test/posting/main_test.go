// Package posting tests Kubernetes Events from handlers against a real
// kube-apiserver and etcd (envtest), one control plane for the package:
// the Event bodies Kopf posts, the cuts and drops, and the gates.
package posting

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
	ctrllog.SetLogger(logr.Discard())
	var err error
	env, err = testenv.Start(testenv.ExampleCRD())
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
