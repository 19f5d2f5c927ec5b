package daemons

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kopf-go/kopf/internal/causes"
	"github.com/kopf-go/kopf/internal/lazylog"
	"github.com/kopf-go/kopf/internal/tracing"
	"github.com/kopf-go/kopf/pkg/memo"
)

// object is what the supervisor knows of one object.
type object struct {
	sup  *Supervisor
	ref  Ref
	host Host
	log  logr.Logger
	// runners by handler id, including stopping ones until they exit.
	runners map[string]*runner
	// foreverStopped are handlers that ended on their own: they are not
	// spawned again for this object in this process.
	foreverStopped map[string]bool
	idleReset      time.Time
	essence        uint64
	gone           bool
	// memo is the object's memo as the last Sync gave it: the runners
	// read it without the supervisor's lock, which every cycle of every
	// object takes.
	memo atomic.Pointer[memo.Memo]
}

// objectLocked returns the object's entry, creating it (the caller holds mu).
func (s *Supervisor) objectLocked(ref Ref, host Host, log logr.Logger) *object {
	o, ok := s.objects[ref.UID]
	if !ok {
		o = &object{sup: s, ref: ref, host: host, log: log, runners: map[string]*runner{},
			foreverStopped: map[string]bool{}, idleReset: s.clock.Now()}
		s.objects[ref.UID] = o
	}
	// The ref is kept from the first Sync: runners read it without the
	// lock, and a uid's namespace and name never change anyway.
	o.log = log
	return o
}

// Sync brings the object's daemons and timers in line with the handlers
// that match it now: missing ones are spawned (unless they ended on their
// own before), running ones that no longer match are stopped. The essence
// fingerprint tells timers with an idle time whether the object changed.
// Handlers that are still stopping count as running: they are spawned again
// after they have exited (which triggers another reconcile).
//
// obj, if not nil, is the object as the caller just read it: spawned
// runners start with a copy of it rather than reading it themselves, so
// that the reading (deep in a cache's code) does not grow the stacks of
// goroutines that then keep them for as long as they run. The copies are
// made outside the supervisor's lock: every cycle of every object and
// every runner's first attempt take that lock, and a takeover that spawns
// tens of thousands of runners at once would have them all wait on each
// copy.
func (s *Supervisor) Sync(ref Ref, host Host, log logr.Logger, matching []Handler, essence uint64, m *memo.Memo, obj causes.Object) {
	var firsts []causes.Object
	if obj != nil {
		for range s.toSpawn(ref, matching) {
			first, _ := obj.DeepCopyObject().(causes.Object)
			firsts = append(firsts, first)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing || s.paused {
		return
	}
	o := s.objectLocked(ref, host, log)
	// An object seen again is not gone: it came back (into a ring
	// member's cache, say) while its runners were still stopping, and
	// their exits must ask for the reconcile that spawns them again.
	o.gone = false
	o.memo.Store(m)
	if essence != o.essence {
		o.essence = essence
		o.idleReset = s.clock.Now()
	}
	wanted := map[string]bool{}
	for _, h := range matching {
		wanted[h.ID] = true
		if _, running := o.runners[h.ID]; running || o.foreverStopped[h.ID] {
			continue
		}
		// The runners spawned since toSpawn counted (none, but for a
		// runner that exited meanwhile) read the object themselves.
		var first causes.Object
		if len(firsts) > 0 {
			first, firsts = firsts[0], firsts[1:]
		}
		s.spawnLocked(o, h, first)
	}
	for id, r := range o.runners {
		if !wanted[id] {
			r.stop(StopFiltersMismatch)
		}
	}
}

// toSpawn counts the matching handlers that Sync would spawn for the
// object now (as a range over that many).
func (s *Supervisor) toSpawn(ref Ref, matching []Handler) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing || s.paused {
		return 0
	}
	o := s.objects[ref.UID]
	n := 0
	for _, h := range matching {
		if o != nil {
			if _, running := o.runners[h.ID]; running || o.foreverStopped[h.ID] {
				continue
			}
		}
		n++
	}
	return n
}

// spawnLocked starts a runner of the handler for the object (the caller
// holds mu, so that Stop and the shutdown see the runner at once).
func (s *Supervisor) spawnLocked(o *object, h Handler, first causes.Object) {
	ctx, cancel := context.WithCancelCause(s.base)
	// The runner keeps its logger as long as it runs: its values are
	// bound only when it writes.
	log := lazylog.WithValues(o.log, "handler", h.ID)
	r := &runner{
		sup: s, obj: o, h: h,
		log:     log,
		ctx:     ctx,
		logCtx:  tracing.WithObject(logr.NewContext(ctx, log), o.ref.Namespace, o.ref.Name, string(o.ref.UID)),
		cancel:  cancel,
		stopped: make(chan struct{}),
		done:    make(chan struct{}),
	}
	r.first = first
	o.runners[h.ID] = r
	s.settings.Observer.Spawned(o.host, &r.h)
	s.wg.Add(1)
	go r.run()
}

// ForeverStopped reports whether the handler ended on its own for this
// object: it neither runs again nor needs the finalizer.
func (s *Supervisor) ForeverStopped(uid types.UID, id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.objects[uid]
	return ok && o.foreverStopped[id]
}

// exited is called by a runner's goroutine as it returns.
func (s *Supervisor) exited(r *runner) {
	s.mu.Lock()
	o := r.obj
	if o.runners[r.h.ID] == r {
		delete(o.runners, r.h.ID)
	}
	if r.reason == 0 {
		o.foreverStopped[r.h.ID] = true
	}
	s.settings.Observer.Exited(o.host, &r.h, r.reason)
	gone := o.gone
	if gone && len(o.runners) == 0 {
		delete(s.objects, o.ref.UID)
	}
	quiet := s.closing || s.paused
	s.mu.Unlock()
	r.cancel(StopDone)
	close(r.done)
	s.notify()
	// Another cycle decides about the finalizer, or spawns the handler again.
	if !gone && !quiet {
		o.host.Enqueue(o.ref)
	}
}
