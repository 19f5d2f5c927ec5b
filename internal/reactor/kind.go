package reactor

import (
	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// kindState is one kind's state, in one place: its objects' Go type and
// GVK, its label in the metrics, its clients and writer, the memories of
// its objects, the channel of its daemons' requests for reconciles, and
// whose objects are this replica's. The kind's reconciler, its daemons'
// host and its low-level handlers share it; none keeps a copy of its
// parts.
type kindState struct {
	kindObjects
	// kindLabel is the kind as the metrics name it.
	kindLabel string
	clients   *clients
	writer    *writer
	memories  *memories
	// events carries the daemons' requests for reconciles.
	events chan event.GenericEvent
	// own says which objects are this replica's to work on.
	own ownership
	// daemonLog is the kind's logger for daemons and timers: they outlive
	// the reconcile that spawned them, so they do not take its logger.
	daemonLog logr.Logger
}
