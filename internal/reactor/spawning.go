package reactor

import (
	"fmt"
	"hash/fnv"

	"github.com/go-logr/logr"

	"github.com/kopf-go/kopf/internal/causes"
	"github.com/kopf-go/kopf/internal/daemons"
	"github.com/kopf-go/kopf/internal/execution"
	"github.com/kopf-go/kopf/internal/lazylog"
	"github.com/kopf-go/kopf/internal/posting"
	"github.com/kopf-go/kopf/internal/registry"
	"github.com/kopf-go/kopf/pkg/diffbase"
)

// spawnSubject is what daemon and timer filters look at: the object now.
func (r daemonSync) spawnSubject(c *cycle) *registry.Subject {
	return &registry.Subject{
		Obj:            c.obj,
		Labels:         c.obj.GetLabels(),
		Annotations:    c.obj.GetAnnotations(),
		Cause:          &causes.Cause{Body: c.body, Patch: c.patch, Memo: c.mem.memo, Indices: r.settings.Indices},
		FilterPanicked: r.filterPanicked(c.log),
	}
}

// syncDaemons spawns the daemons and timers that match the object and
// stops those that no longer do. Deleted objects are handled by
// stopDaemons instead.
func (r daemonSync) syncDaemons(c *cycle) {
	if len(r.kind.Spawning) == 0 || c.obj.GetDeletionTimestamp() != nil {
		return
	}
	matching := r.kind.MatchSpawning(r.spawnSubject(c))
	handlers := make([]daemons.Handler, len(matching))
	for i, h := range matching {
		handlers[i] = h.Daemon()
	}
	var fingerprint uint64
	if r.kind.HasIdleTimers() {
		h := fnv.New64a()
		h.Write(diffbase.Encode(c.newEssence))
		fingerprint = h.Sum64()
	}
	r.sup.Sync(c.ref(), r.host, r.objectDaemonLog(c), handlers, fingerprint, c.mem.memo, c.obj)
}

// objectDaemonLog is the logger of the object's daemons and timers: the
// object's values are bound only when a line is written, since the
// supervisor keeps the logger as long as the object, and posting follows
// the operator's settings as for change handlers.
func (r daemonSync) objectDaemonLog(c *cycle) logr.Logger {
	log := lazylog.WithValues(r.daemonLog, "namespace", c.obj.GetNamespace(), "name", c.obj.GetName())
	return posting.Logger(log, r.settings.Poster, posting.Ref{GVK: r.gvk, Namespace: c.obj.GetNamespace(), Name: c.obj.GetName(), UID: c.obj.GetUID()})
}

// daemonsRequireFinalizer reports whether a daemon or timer that matches
// the object (and did not end on its own) needs the finalizer, so that the
// object's deletion waits for it to exit.
func (r daemonSync) daemonsRequireFinalizer(c *cycle) bool {
	if len(r.kind.Spawning) == 0 {
		return false
	}
	for _, h := range r.kind.MatchSpawning(r.spawnSubject(c)) {
		if !r.sup.ForeverStopped(c.obj.GetUID(), h.ID) {
			return true
		}
	}
	return false
}

// stopDaemons stops the daemons and timers of a deleted object and notes
// which still block its deletion, and when to look again.
func (r daemonSync) stopDaemons(c *cycle) {
	b := r.sup.Stop(c.obj.GetUID(), daemons.StopResourceDeleted)
	c.left.Blocking, c.left.Polling = len(b.Names) > 0, b.Polling
	for _, name := range b.Lingering {
		c.local.V(1).Info(fmt.Sprintf("%s is still exiting. The next check is in %s seconds.", name, execution.Seconds(b.Polling.Round(logPrecision))))
	}
}

// stopAndWait stops the object's daemons and timers for the reason and
// lists those that still run, abandoned ones included: a goroutine that
// still runs may still act on the object.
func (r daemonSync) stopAndWait(c *cycle, reason daemons.StopReason) []string {
	b := r.sup.Stop(c.obj.GetUID(), reason)
	return append(b.Names, b.Abandoned...)
}
