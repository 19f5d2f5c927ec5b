package reactor

import (
	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/internal/daemons"
	"github.com/kopf-go/kopf/pkg/patch"
)

// cycle is the state of one processing cycle of one object.
type cycle struct {
	// log is the object's logger, whose lines may be posted as Events (if
	// the operator posts log lines); local is the same, never posted, for
	// the engine's own bookkeeping lines, as in Kopf.
	log   logr.Logger
	local logr.Logger
	obj   client.Object
	body  map[string]any
	mem   *memory
	patch *patch.Patch
	// finalizer is what the cycle does to the finalizer (decide, settle).
	finalizer finalizerChange
	// left is what the handlers and daemons left: pending handlers, and
	// daemons that still keep a deleted object.
	left leftover
	// newEssence is the object's essence now; oldEssence the last handled
	// one (nil: none, or unreadable, diffBaseErr says why); essence is the
	// new last handled essence, if this cycle stores one.
	newEssence  map[string]any
	oldEssence  map[string]any
	diffBaseErr error
	essence     map[string]any
}

// ref identifies the cycle's object for the supervisor.
func (c *cycle) ref() daemons.Ref {
	return daemons.Ref{UID: c.obj.GetUID(), Namespace: c.obj.GetNamespace(), Name: c.obj.GetName()}
}
