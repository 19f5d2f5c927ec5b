package reactor

import (
	"context"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/kopf-go/kopf/internal/clients"
	"github.com/kopf-go/kopf/internal/daemons"
	"github.com/kopf-go/kopf/internal/ownership"
	"github.com/kopf-go/kopf/internal/posting"
	"github.com/kopf-go/kopf/internal/write"
)

// kindState is one kind's state, in one place: its objects' Go type and
// GVK, its label in the metrics, its clients and writer, the memories of
// its objects, the channel of its daemons' requests for reconciles, and
// whose objects are this replica's. The kind's reconciler, its daemons'
// host and its low-level handlers share it; none keeps a copy of its
// parts.
type kindState struct {
	kindObjects
	// kindLabel is the kind as the metrics name it; invocations counts
	// its change handlers' attempts under it.
	kindLabel   string
	invocations func(handler, cause, outcome string, took time.Duration, called bool)
	clients     *clients.Current
	writer      *write.Writer
	memories    *memories
	// events carries the daemons' requests for reconciles.
	events chan event.GenericEvent
	// own says which objects are this replica's to work on.
	own ownership.Ownership
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

// report logs a problem with the object's stored state and, the first time
// this value is seen, posts a Warning Event so that users see it too.
func (r *kindState) report(ctx context.Context, c *cycle, what, value, reason, message string) {
	c.local.Error(nil, message) // the Event below says it to users once
	if !c.mem.firstReport(what, value) || r.settings.Poster == nil || !r.settings.Poster.Allows(posting.TypeWarning) {
		return
	}
	ref := posting.Ref{GVK: r.gvk, Namespace: c.obj.GetNamespace(), Name: c.obj.GetName(), UID: c.obj.GetUID()}
	if err := r.settings.Poster.Post(ctx, ref, posting.TypeWarning, reason, message); err != nil {
		c.local.Error(err, "Failed to post an event.")
	}
}

// handlerContext is the context a handler runs in: the logger, and the
// poster for its Events.
func (r *kindState) handlerContext(ctx context.Context, log logr.Logger) context.Context {
	return clients.WithClient(posting.NewContext(logr.NewContext(ctx, log), r.settings.Poster), r.settings.Client)
}

// reconciles reports whether the kind has a controller: change handlers,
// daemons or timers. A kind with low-level handlers only has none, unless
// it is sharded: handing its objects over takes a reconcile.
func (r *kindState) reconciles() bool {
	return len(r.kind.Changing) > 0 || len(r.kind.Spawning) > 0 || r.own.ReconcilesEveryKind()
}

// forgetObjects forgets the remembered objects that keep does not keep,
// and stops their daemons and timers as for deleted objects: they are
// gone from what the operator serves (their namespace or their kind).
func (r *kindState) forgetObjects(keep func(key types.NamespacedName) bool) {
	for _, key := range r.memories.keys() {
		if keep(key) {
			continue
		}
		if uid := r.memories.forget(key); uid != "" {
			r.sup.Gone(uid)
		}
	}
}
