// Package sharding tests rings of replicas that share a kind's objects
// (docs/sharding.md): several operators in one test binary, against one
// real control plane, with a detector of overlapping executions.
package sharding

import (
	"testing"

	"github.com/kopf-go/kopf/pkg/kopftest"
	"github.com/kopf-go/kopf/test/testenv"
)

var env *kopftest.Env

func TestMain(m *testing.M) {
	kopftest.Main(m, kopftest.Options{CRDs: append(testenv.PeeringCRDs(), testenv.ExampleCRD())}, &env)
}
