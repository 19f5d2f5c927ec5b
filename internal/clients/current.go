// Package clients holds the engine's clients: the one each kind reads
// and writes with, swapped by freezes (Current); the one handlers read
// through when the served namespaces follow patterns (Served); the
// operator's wrapper with its panics contained (Contain); and the
// handlers' client in their context.
package clients

import (
	"context"
	"errors"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ErrFrozen is what reads return while the operator is frozen.
var ErrFrozen = errors.New("the operator is frozen: no objects are read")

// Current holds the client a kind reads and writes with: the current
// run's, which reads its cache (none while the operator is frozen), and
// the plain one that writes between runs (a daemon's last result during a
// freeze). The engine swaps the run's in and out; cycles and daemons read
// it concurrently.
type Current struct {
	current atomic.Pointer[client.Client]
	direct  client.Client
}

// NewCurrent holds direct, which writes between runs, and no run's client.
func NewCurrent(direct client.Client) *Current { return &Current{direct: direct} }

// Set points at a run's client, or at none.
func (cs *Current) Set(c client.Client) {
	if c == nil {
		cs.current.Store(nil)
		return
	}
	cs.current.Store(&c)
}

// Writing is the current run's client, or the plain one between runs.
func (cs *Current) Writing() client.Client {
	if c := cs.current.Load(); c != nil {
		return *c
	}
	return cs.direct
}

// Get reads an object from the current run's cache.
func (cs *Current) Get(ctx context.Context, key types.NamespacedName, obj client.Object, opts ...client.GetOption) error {
	c := cs.current.Load()
	if c == nil {
		return ErrFrozen
	}
	return (*c).Get(ctx, key, obj, opts...)
}
