package reactor

import (
	"context"
	"errors"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// errFrozen is what reads return while the operator is frozen.
var errFrozen = errors.New("the operator is frozen: no objects are read")

// clients holds the client a kind reads and writes with: the current
// run's, which reads its cache (none while the operator is frozen), and
// the plain one that writes between runs (a daemon's last result during a
// freeze). The engine swaps the run's in and out; cycles and daemons read
// it concurrently.
type clients struct {
	current atomic.Pointer[client.Client]
	direct  client.Client
}

// set points at a run's client, or at none.
func (cs *clients) set(c client.Client) {
	if c == nil {
		cs.current.Store(nil)
		return
	}
	cs.current.Store(&c)
}

// writing is the current run's client, or the plain one between runs.
func (cs *clients) writing() client.Client {
	if c := cs.current.Load(); c != nil {
		return *c
	}
	return cs.direct
}

// get reads an object from the current run's cache.
func (cs *clients) get(ctx context.Context, key types.NamespacedName, obj client.Object) error {
	c := cs.current.Load()
	if c == nil {
		return errFrozen
	}
	return (*c).Get(ctx, key, obj)
}
