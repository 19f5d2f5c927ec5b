package reactor

import (
	"sync"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/kopf-go/kopf/internal/daemons"
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
	// settings are the engine's; sup supervises the daemons, which reach
	// the kind through host.
	settings Settings
	sup      *daemons.Supervisor
	host     *kindHost
	// handed are the uids of objects handed over whose DELETED event (the
	// object leaving the cache) is still to come, for on-event handlers.
	handed sync.Map
}

// handlerRound runs the kind's change handlers of one cycle (changes.go).
type handlerRound struct{ *kindState }

// daemonSync keeps the kind's daemons and timers in line with an object
// (spawning.go).
type daemonSync struct{ *kindState }
