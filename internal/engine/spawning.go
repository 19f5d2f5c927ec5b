package engine

import (
	"hash/fnv"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/internal/causes"
	"github.com/kopf-go/kopf/internal/cycle"
	"github.com/kopf-go/kopf/internal/daemons"
	"github.com/kopf-go/kopf/internal/lazylog"
	"github.com/kopf-go/kopf/internal/posting"
	"github.com/kopf-go/kopf/internal/registry"
	"github.com/kopf-go/kopf/pkg/diffbase"
)

// daemonSync keeps the kind's daemons and timers in line with an object:
// the cycle's Daemons.
type daemonSync struct{ k *kindState }

var _ cycle.Daemons = daemonSync{}

// spawnSubject is what daemon and timer filters look at: the object now.
func (r daemonSync) spawnSubject(o cycle.Object) *registry.Subject {
	return &registry.Subject{
		Obj:            o.Obj,
		Cause:          &causes.Cause{Body: o.Body, Patch: o.Patch, Memo: o.Mem.Memo(), Indices: r.k.settings.Indices},
		FilterPanicked: cycle.FilterPanicked(r.k.kindLabel, o.Log),
	}
}

// Sync spawns the daemons and timers that match the object and stops
// those that no longer do. Deleted objects are handled by Stop instead.
func (r daemonSync) Sync(o cycle.Object, essence map[string]any) {
	if len(r.k.objects.Registered.Spawning) == 0 || o.Obj.GetDeletionTimestamp() != nil {
		return
	}
	matching := r.k.objects.Registered.MatchSpawning(r.spawnSubject(o))
	handlers := make([]daemons.Handler, len(matching))
	for i, h := range matching {
		handlers[i] = h.Daemon()
	}
	var fingerprint uint64
	if r.k.objects.Registered.HasIdleTimers() {
		// Idle timers restart their countdown when the essence changes.
		h := fnv.New64a()
		h.Write(diffbase.Encode(essence))
		fingerprint = h.Sum64()
	}
	r.k.sup.Sync(daemons.Ref{UID: o.Obj.GetUID(), Namespace: o.Obj.GetNamespace(), Name: o.Obj.GetName()}, r.k.host, func() logr.Logger { return r.objectDaemonLog(o.Obj) }, handlers, fingerprint, o.Mem.Memo(), o.Obj)
}

// objectDaemonLog is the logger of the object's daemons and timers: the
// object's values are bound only when a line is written, since the
// supervisor keeps the logger as long as the object, and posting follows
// the operator's settings as for change handlers.
func (r daemonSync) objectDaemonLog(obj client.Object) logr.Logger {
	log := lazylog.WithValues(r.k.daemonLog, "namespace", obj.GetNamespace(), "name", obj.GetName())
	return posting.Logger(log, r.k.settings.Poster, posting.Ref{GVK: r.k.objects.GVK, Namespace: obj.GetNamespace(), Name: obj.GetName(), UID: obj.GetUID()})
}

// RequireFinalizer reports whether a daemon or timer that matches the
// object (and did not end on its own) needs the finalizer, so that the
// object's deletion waits for it to exit.
func (r daemonSync) RequireFinalizer(o cycle.Object) bool {
	if len(r.k.objects.Registered.Spawning) == 0 {
		return false
	}
	for _, h := range r.k.objects.Registered.MatchSpawning(r.spawnSubject(o)) {
		if !r.k.sup.ForeverStopped(o.Obj.GetUID(), h.ID) {
			return true
		}
	}
	return false
}

// Stop stops the daemons and timers of a deleted object, and says which
// still block its deletion, and when to look again.
func (r daemonSync) Stop(o cycle.Object) daemons.Blocking {
	return r.k.sup.Stop(o.Obj.GetUID(), daemons.StopResourceDeleted)
}

// StopAndWait stops the object's daemons and timers for the reason and
// lists those that still run, abandoned ones included: a goroutine that
// still runs may still act on the object.
func (r daemonSync) StopAndWait(o cycle.Object, reason daemons.StopReason) []string {
	b := r.k.sup.Stop(o.Obj.GetUID(), reason)
	return append(b.Names, b.Abandoned...)
}
