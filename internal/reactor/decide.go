package reactor

import (
	"time"

	"github.com/kopf-go/kopf/internal/causes"
	"github.com/kopf-go/kopf/pkg/diff"
)

// This file is the decision of one cycle, apart from doing it: pure
// functions of what the cycle knows (facts, gathered in pipeline.go),
// which the pipeline then carries out. decide says which step the cycle
// takes (a handover, a stand-by, a wait for the cache, the previous
// cycle's unwritten outcomes, or the change handlers) and what happens
// before the change handlers; settle says what happens to the finalizer
// after them, and requeueAfter when the object comes back once the
// cycle's patch is written.

// finalizerChange is what a cycle does to this operator's finalizer.
type finalizerChange int

const (
	keepFinalizer finalizerChange = iota
	addFinalizer
	removeFinalizer
)

// facts are what a cycle knows of its object before any handler runs.
type facts struct {
	// Claim is what this replica may do with the object (ownership.go).
	Claim claim
	// CacheWait is how long the cache may still lag behind this process's
	// last write of the object (consistency.go); zero: it does not.
	CacheWait time.Duration
	// Unwritten: the previous cycle's outcomes could not be written.
	Unwritten bool
	// Deleting: the object has a deletionTimestamp; Finalized: it has this
	// operator's finalizer.
	Deleting, Finalized bool
	// DiffBaseInvalid: the stored last handled essence cannot be read.
	DiffBaseInvalid bool
	// HasDiffBase: there is a last handled essence (stored and readable,
	// or kept in memory because it was too large to store).
	HasDiffBase bool
	// Diff is the change from the last handled essence to the current one.
	Diff diff.Diff
	// Initial: the object was first seen in this process's initial listing
	// and no cause of it has been fully handled yet (resume handlers join).
	Initial bool
}

// matches are what the registry says of the object under a cause.
type matches struct {
	// Visible: some change handler prematches the object; if none does,
	// the object is left alone ("stealth mode").
	Visible bool
	// HandlersNeedFinalizer: a mandatory delete handler prematches.
	HandlersNeedFinalizer bool
	// DaemonsNeedFinalizer: a daemon or timer matches that has not ended
	// on its own, so deletion must wait for it to exit.
	DaemonsNeedFinalizer bool
}

// step is the one thing a cycle does.
type step int

const (
	// stepHandle: the change handlers' part of the cycle (the rest of
	// the plan says what of it).
	stepHandle step = iota
	// stepHandOver: let go of the object to the plan's Next member
	// (docs/sharding.md, "Handover"), once its daemons have exited.
	stepHandOver
	// stepStandBy: run nothing, and stop the object's daemons: the object
	// is in the cache but not this replica's to work on (the plan's Why).
	stepStandBy
	// stepWaitForCache: come back after the plan's Wait, or with the
	// watch event of this process's last write, whichever is first.
	stepWaitForCache
	// stepWriteUnwritten: write the previous cycle's outcomes, and nothing
	// else, so that no handler's outcome is lost and none runs twice.
	stepWriteUnwritten
)

// plan is what a cycle does before its change handlers run.
type plan struct {
	Step step
	// Next is the member a handover goes to; WriteFirst: the previous
	// cycle's unwritten outcomes are written before the handover (the
	// next owner reads them). Why is why the replica stands by. Wait is
	// how long to wait for the cache.
	Next       string
	WriteFirst bool
	Why        string
	Wait       time.Duration

	Reason  causes.Reason
	Initial bool
	// ReportDiffBase: the last handled essence cannot be read, and changes
	// cannot be told apart; the cycle reports it and does nothing else.
	ReportDiffBase bool
	// Free: a deletion without this operator's finalizer; nothing to do.
	Free bool
	// Stealth: no change handler matches; the object's standing is reset.
	Stealth bool
	// Finalizer is added or removed in a cycle of its own: nothing else
	// happens in it.
	Finalizer finalizerChange
	// StopDaemons: the object is being deleted; its daemons are told to
	// stop before the deletion handlers run, so that polite ones exit
	// meanwhile.
	StopDaemons bool
	// RunHandlers: the change handlers of the cause run; NoOp: nothing has
	// changed that they care about.
	RunHandlers bool
	NoOp        bool
	// Release: the finalizer goes once the deletion handlers are done and
	// the daemons have exited (settle).
	Release bool
}

// decide plans a cycle. Whose object it is comes first: an object being
// handed over, or not this replica's, runs nothing more. Then the cache
// must show this process's last write, lest handlers run twice on the
// body from before it; then the previous cycle's unwritten outcomes go
// first. Only then the change handlers' part is planned. lookup asks the
// registry about the object under the detected cause; it is not asked
// when the cycle has nothing to do (any step above, an unreadable last
// handled essence, a deletion that is not ours), as the filters are
// users' code.
func decide(f facts, lookup func(reason causes.Reason, initial bool) matches) plan {
	switch {
	case f.Claim.kind == handOver:
		return plan{Step: stepHandOver, Next: f.Claim.next, WriteFirst: f.Unwritten}
	case f.Claim.kind == standBy:
		return plan{Step: stepStandBy, Why: f.Claim.why}
	case f.CacheWait > 0:
		return plan{Step: stepWaitForCache, Wait: f.CacheWait}
	case f.Unwritten:
		return plan{Step: stepWriteUnwritten}
	}
	if f.DiffBaseInvalid && !f.Deleting {
		return plan{ReportDiffBase: true}
	}
	reason, initial := causes.Detect(causes.Input{
		Deleting:    f.Deleting,
		Finalized:   f.Finalized,
		HasDiffBase: f.HasDiffBase,
		Diff:        f.Diff,
		Initial:     f.Initial,
	})
	p := plan{Reason: reason, Initial: initial}
	if reason == causes.Free {
		p.Free = true
		return p
	}
	m := lookup(reason, initial)
	p.Stealth = !m.Visible
	required := m.Visible && m.HandlersNeedFinalizer || m.DaemonsNeedFinalizer
	switch {
	case required && !f.Finalized && !f.Deleting:
		p.Finalizer = addFinalizer
		return p
	case !required && f.Finalized:
		p.Finalizer = removeFinalizer
		return p
	}
	p.StopDaemons = f.Deleting
	p.RunHandlers = m.Visible && reason.HandlesChanges()
	p.NoOp = m.Visible && reason == causes.NoOp
	p.Release = f.Deleting && f.Finalized
	return p
}

// syncsDaemons reports whether the object's daemons and timers follow its
// state in this cycle: they do whenever the object is this replica's to
// work on, consistent or not, as they read the latest object themselves.
func (p plan) syncsDaemons() bool {
	return p.Step != stepHandOver && p.Step != stepStandBy
}

// leftover is what the change handlers and the daemons left after a
// cycle's handlers ran.
type leftover struct {
	// Pending: a change handler is not finished; Delay: when it is due.
	Pending bool
	Delay   time.Duration
	// Blocking: daemons still keep the object; Polling: when to look again.
	Blocking bool
	Polling  time.Duration
}

// settle decides the finalizer once the handlers ran: a deleted object's
// finalizer goes when its deletion handlers are done and its daemons have
// exited.
func (p plan) settle(l leftover) finalizerChange {
	if p.Finalizer != keepFinalizer {
		return p.Finalizer
	}
	if p.Release && !l.Pending && !l.Blocking {
		return removeFinalizer
	}
	return keepFinalizer
}

// sleep is the log line that goes with a requeue for pending handlers.
type sleep int

const (
	noSleep sleep = iota
	// sleeping: "Sleeping for N seconds for the delayed handlers."
	sleeping
	// sleepSkipped: the write brings a watch event that starts the next
	// cycle; no requeue of the engine's own.
	sleepSkipped
)

// requeue is when the object comes back after a cycle.
type requeue struct {
	After time.Duration
	Log   sleep
}

// soon is the shortest requeue: after a conflicted finalizer write, and
// for a pending handler that is due now but whose cycle wrote nothing
// (so no watch event comes).
const soon = time.Millisecond

// requeueAfter decides when to come back once the cycle's patch is
// written (written: the API server changed the object; conflict: the
// finalizer's write conflicted and was left out).
func requeueAfter(l leftover, written, conflict bool) requeue {
	switch {
	case conflict:
		return requeue{After: soon}
	case l.Blocking:
		// Daemons that exit ask for a reconcile themselves; this is the
		// slow re-check of those that do not.
		return requeue{After: l.Polling}
	case l.Pending && (l.Delay > 0 || !written):
		return requeue{After: max(l.Delay, soon), Log: sleeping}
	case l.Pending:
		return requeue{Log: sleepSkipped}
	}
	return requeue{}
}
