package daemons

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/kopf-go/kopf/internal/causes"
	"github.com/kopf-go/kopf/internal/indexing"
	"github.com/kopf-go/kopf/internal/lazylog"
	"github.com/kopf-go/kopf/internal/memo"
)

// Settings of the supervisor; zero values mean the defaults.
type Settings struct {
	// ShutdownGrace is how long the operator's stop waits for daemons,
	// timers and handlers before it gives up on them and says so.
	ShutdownGrace time.Duration
	// ReportInterval is how often, while waiting, the supervisor logs what
	// it is waiting for.
	ReportInterval time.Duration
	// DefaultBackoff is the retry delay after arbitrary errors.
	DefaultBackoff time.Duration
	// Clock is the source of time, replaceable in tests.
	Clock clock.WithTicker
	// Logger receives the supervisor's own lines (shutdown reports).
	Logger logr.Logger
	// Indices are given to every daemon and timer.
	Indices *indexing.Indices
	// BaseContext is the parent of every daemon's context (e.g. carrying
	// the Event poster); default: context.Background().
	BaseContext context.Context
	// Local makes a logger whose lines are never posted as Events, for the
	// supervisor's bookkeeping lines (stop messages); nil: no change.
	Local func(logr.Logger) logr.Logger
	// Observer learns what daemons and timers do (for metrics); nil: none.
	Observer Observer
}

// Defaults of Settings.
const (
	DefaultShutdownGrace  = 20 * time.Second
	DefaultReportInterval = 5 * time.Second
	DefaultBackoff        = 60 * time.Second
)

// Supervisor owns the daemons and timers of all objects, and tracks the
// change handlers in flight, so that the operator's stop can wait for all
// of them and name those that hold it up. It is a manager Runnable: its
// Start returns when the operator stops and everything has exited (or the
// grace is over).
type Supervisor struct {
	settings Settings
	clock    clock.WithTicker
	log      logr.Logger
	// base is the parent of every daemon's context; it ends only after the
	// shutdown, for whatever has been abandoned.
	base       context.Context
	cancelBase context.CancelFunc
	wg         sync.WaitGroup
	// changed wakes the shutdown wait when a task ends.
	changed chan struct{}

	mu       sync.Mutex
	objects  map[types.UID]*object
	inflight map[int]task
	nextTask int
	closing  bool
	// paused: the operator is frozen; nothing is spawned, and exits ask
	// for no reconciles (the listing after the pause reconciles all).
	paused bool
}

// task is something in flight that the shutdown waits for.
type task struct {
	name  string
	since time.Time
}

// New returns a supervisor with the settings' defaults filled in.
func New(s Settings) *Supervisor {
	if s.ShutdownGrace == 0 {
		s.ShutdownGrace = DefaultShutdownGrace
	}
	if s.ReportInterval == 0 {
		s.ReportInterval = DefaultReportInterval
	}
	if s.DefaultBackoff == 0 {
		s.DefaultBackoff = DefaultBackoff
	}
	if s.Clock == nil {
		s.Clock = clock.RealClock{}
	}
	if s.BaseContext == nil {
		s.BaseContext = context.Background()
	}
	if s.Local == nil {
		s.Local = func(l logr.Logger) logr.Logger { return l }
	}
	if s.Observer == nil {
		s.Observer = noObserver{}
	}
	base, cancel := context.WithCancel(s.BaseContext)
	return &Supervisor{
		settings:   s,
		clock:      s.Clock,
		log:        s.Logger,
		base:       base,
		cancelBase: cancel,
		changed:    make(chan struct{}, 1),
		objects:    map[types.UID]*object{},
		inflight:   map[int]task{},
	}
}

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
	memo           *memo.Memo
}

func (o *object) idleLeft(idle time.Duration) time.Duration {
	o.sup.mu.Lock()
	defer o.sup.mu.Unlock()
	return o.idleReset.Add(idle).Sub(o.sup.clock.Now())
}

func (o *object) idleResetAfter(t time.Time) bool {
	o.sup.mu.Lock()
	defer o.sup.mu.Unlock()
	return o.idleReset.After(t)
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
// goroutines that then keep them for as long as they run.
func (s *Supervisor) Sync(ref Ref, host Host, log logr.Logger, matching []Handler, essence uint64, m *memo.Memo, obj causes.Object) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing || s.paused {
		return
	}
	o := s.objectLocked(ref, host, log)
	o.memo = m
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
		s.spawnLocked(o, h, obj)
	}
	for id, r := range o.runners {
		if !wanted[id] {
			r.stop(StopFiltersMismatch)
		}
	}
}

func (s *Supervisor) spawnLocked(o *object, h Handler, obj causes.Object) {
	ctx, cancel := context.WithCancelCause(s.base)
	// The runner keeps its logger as long as it runs: its values are
	// bound only when it writes.
	log := lazylog.WithValues(o.log, "handler", h.ID)
	r := &runner{
		sup: s, obj: o, h: h,
		log:     log,
		ctx:     ctx,
		logCtx:  logr.NewContext(ctx, log),
		cancel:  cancel,
		stopped: make(chan struct{}),
		done:    make(chan struct{}),
	}
	if obj != nil {
		r.first, _ = obj.DeepCopyObject().(causes.Object)
	}
	o.runners[h.ID] = r
	s.settings.Observer.Spawned(o.host, &r.h)
	s.wg.Add(1)
	go r.run()
}

// Blocking is what holds up an object's deletion: its daemons and timers
// that still run and are not abandoned.
type Blocking struct {
	// Names of the runners, sorted.
	Names []string
	// Lingering are those that were asked to stop before this call and
	// have no backoff or timeout running any more: they are "still
	// exiting", for as long as they like.
	Lingering []string
	// Polling is the shortest re-check interval among them.
	Polling time.Duration
}

// Stop asks all daemons and timers of the object to stop for the reason,
// and says which still hold up its deletion.
func (s *Supervisor) Stop(uid types.UID, reason StopReason) Blocking {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b Blocking
	o, ok := s.objects[uid]
	if !ok {
		return b
	}
	for _, r := range o.runners {
		wasStopping := !r.stopSince.IsZero()
		r.stop(reason)
		if r.abandoned {
			continue
		}
		b.Names = append(b.Names, r.h.Handler.String())
		if wasStopping && !r.escalating {
			b.Lingering = append(b.Lingering, r.h.Handler.String())
		}
		if b.Polling == 0 || r.h.polling() < b.Polling {
			b.Polling = r.h.polling()
		}
	}
	sort.Strings(b.Names)
	sort.Strings(b.Lingering)
	return b
}

// Gone stops everything of an object that no longer exists and forgets the
// object once its runners have exited.
func (s *Supervisor) Gone(uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.objects[uid]
	if !ok {
		return
	}
	o.gone = true
	for _, r := range o.runners {
		r.stop(StopResourceDeleted)
	}
	if len(o.runners) == 0 {
		delete(s.objects, uid)
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

// Track records a change handler in flight until the returned function
// is called, so that the operator's stop waits for it and names it.
func (s *Supervisor) Track(name string) func() {
	s.mu.Lock()
	id := s.nextTask
	s.nextTask++
	s.inflight[id] = task{name: name, since: s.clock.Now()}
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		delete(s.inflight, id)
		s.mu.Unlock()
		s.notify()
	}
}

func (s *Supervisor) notify() {
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// Pause stops every daemon and timer with OPERATOR_PAUSING, for a freeze:
// they are not ended for good, and start again after it (the listing that
// follows a freeze reconciles every object). Nothing is spawned meanwhile.
func (s *Supervisor) Pause() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.paused = true
	for _, o := range s.objects {
		for _, r := range o.runners {
			r.stop(StopOperatorPausing)
		}
	}
}

// Resume lets daemons and timers be spawned again after a freeze.
func (s *Supervisor) Resume() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.paused = false
}

// Done is closed when the supervisor has finished its shutdown; a caller
// that would block on the operator's machinery gives up then.
func (s *Supervisor) Done() <-chan struct{} { return s.base.Done() }

// NeedLeaderElection keeps the supervisor with the controllers whose
// reconciles feed it.
func (s *Supervisor) NeedLeaderElection() bool { return true }

// Start waits until the operator stops; then it stops every daemon and
// timer (OPERATOR_EXITING) and waits for them and for the change handlers
// in flight, logging what it waits for every report interval. After the
// shutdown grace it gives up, logs what it leaves behind (goroutines
// cannot be killed), and returns.
func (s *Supervisor) Start(ctx context.Context) error {
	<-ctx.Done()
	s.mu.Lock()
	s.closing = true
	for _, o := range s.objects {
		for _, r := range o.runners {
			r.stop(StopOperatorExiting)
		}
	}
	s.mu.Unlock()
	defer s.cancelBase()

	grace := s.clock.NewTimer(s.settings.ShutdownGrace)
	defer grace.Stop()
	report := s.clock.NewTicker(s.settings.ReportInterval)
	defer report.Stop()
	allExited := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(allExited)
	}()
	exitedAll := false
	for {
		if exitedAll && s.pending() == nil {
			return nil
		}
		select {
		case <-allExited:
			exitedAll = true
			allExited = nil
		case <-s.changed:
		case <-report.C():
			if left := s.pending(); len(left) > 0 {
				s.log.Info(fmt.Sprintf("The operator is stopping; still waiting for %d: %s.", len(left), strings.Join(left, ", ")))
			}
		case <-grace.C():
			left := s.pending()
			s.log.Error(nil, fmt.Sprintf("The operator stops without waiting any longer (%s); left running, since goroutines cannot be killed: %s.",
				s.settings.ShutdownGrace, strings.Join(left, ", ")))
			return nil
		}
	}
}

// pending lists what the shutdown still waits for: running daemons and
// timers, and change handlers in flight.
func (s *Supervisor) pending() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	var out []string
	for _, o := range s.objects {
		for _, r := range o.runners {
			state := "stopping for " + now.Sub(r.stopSince).Round(time.Millisecond).String() + ": " + r.reason.String()
			out = append(out, fmt.Sprintf("%s of %s (%s)", r.h.Handler, o.ref, state))
		}
	}
	for _, t := range s.inflight {
		out = append(out, fmt.Sprintf("%s (running for %s)", t.name, now.Sub(t.since).Round(time.Millisecond)))
	}
	sort.Strings(out)
	return out
}
