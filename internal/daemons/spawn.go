package daemons

import (
	"context"
	"slices"
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

// objectLocked returns the object's entry, creating it (the caller holds
// mu); its maps are made when first written. The ref is kept from the
// first Sync: runners read it without the lock, and a uid's namespace and
// name never change anyway.
func (s *Supervisor) objectLocked(ref Ref, host Host) *object {
	o, ok := s.objects[ref.UID]
	if !ok {
		o = &object{sup: s, ref: ref, host: host, idleReset: s.clock.Now()}
		s.objects[ref.UID] = o
	}
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
// goroutines that then keep them for as long as they run.
//
// logFor makes the logger of the object's runners; it is called only when
// some are spawned.
//
// Every cycle of every object takes the supervisor's lock, and a takeover
// spawns tens of thousands of runners at once on as many workers: so the
// lock is held only to decide and to record, and the runners (their
// copies, contexts and loggers) are made between the two, outside it. A
// worker that allocates under the lock may be made to help the garbage
// collector there, and every other worker then waits for it.
func (s *Supervisor) Sync(ref Ref, host Host, logFor func() logr.Logger, matching []Handler, essence uint64, m *memo.Memo, obj causes.Object) {
	s.mu.Lock()
	if s.closing || s.paused {
		s.mu.Unlock()
		return
	}
	o := s.objectLocked(ref, host)
	// An object seen again is not gone: it came back (into a ring
	// member's cache, say) while its runners were still stopping, and
	// their exits must ask for the reconcile that spawns them again.
	o.gone = false
	o.memo.Store(m)
	if essence != o.essence {
		o.essence = essence
		o.idleReset = s.clock.Now()
	}
	var missing []Handler
	for _, h := range matching {
		if o.idle(h.ID) {
			missing = append(missing, h)
		}
	}
	for id, r := range o.runners {
		if !slices.ContainsFunc(matching, func(h Handler) bool { return h.ID == id }) {
			r.stop(StopFiltersMismatch)
		}
	}
	s.mu.Unlock()
	if len(missing) == 0 {
		return
	}
	made := make([]*runner, 0, len(missing))
	log := logFor()
	for _, h := range missing {
		var first causes.Object
		if obj != nil {
			first, _ = obj.DeepCopyObject().(causes.Object)
		}
		made = append(made, s.newRunner(o, h, log, first))
	}
	s.mu.Lock()
	// Meanwhile the supervisor may have closed or paused, the object may
	// have gone (and been dropped), or another cycle may have spawned the
	// same handlers: those runners are dropped unstarted.
	current := !s.closing && !s.paused && s.objects[ref.UID] == o && !o.gone
	started := made[:0]
	for _, r := range made {
		if !current || !o.idle(r.h.ID) {
			r.cancel(StopDone)
			continue
		}
		if o.runners == nil {
			o.runners = map[string]*runner{}
		}
		o.runners[r.h.ID] = r
		s.settings.Observer.Spawned(o.host, &r.h)
		s.wg.Add(1)
		started = append(started, r)
	}
	s.mu.Unlock()
	for _, r := range started {
		go r.run()
	}
}

// idle reports whether the handler neither runs for the object (stopping
// counts as running) nor ended on its own for it (the caller holds mu).
func (o *object) idle(id string) bool {
	_, running := o.runners[id]
	return !running && !o.foreverStopped[id]
}

// newRunner makes a runner of the handler for the object, not yet started
// nor known to the supervisor; objectLog is the object's logger.
func (s *Supervisor) newRunner(o *object, h Handler, objectLog logr.Logger, first causes.Object) *runner {
	ctx, cancel := context.WithCancelCause(s.base)
	// The runner keeps its logger as long as it runs: its values are
	// bound only when it writes.
	log := lazylog.WithValues(objectLog, "handler", h.ID)
	return &runner{
		sup: s, obj: o, h: h,
		log:     log,
		ctx:     ctx,
		logCtx:  tracing.WithObject(logr.NewContext(ctx, log), o.ref.Namespace, o.ref.Name, string(o.ref.UID)),
		cancel:  cancel,
		stopped: make(chan struct{}),
		done:    make(chan struct{}),
		first:   first,
	}
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
		if o.foreverStopped == nil {
			o.foreverStopped = map[string]bool{}
		}
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
