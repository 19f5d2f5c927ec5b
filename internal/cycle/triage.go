package cycle

import (
	"time"

	"github.com/kopf-go/kopf/internal/causes"
	"github.com/kopf-go/kopf/internal/ownership"
)

// step is the one thing a cycle does.
type step int

const (
	// stepHandle: the change handlers' part of the cycle (decide.go).
	stepHandle step = iota
	// stepHandOver: let go of the object to the Next member
	// (docs/sharding.md, "Handover"), once its daemons have exited.
	stepHandOver
	// stepStandBy: run nothing, and stop the object's daemons: the object
	// is in the cache but not this replica's to work on (Why).
	stepStandBy
	// stepWaitForCache: come back after Wait, or with the watch event of
	// this process's last write, whichever is first.
	stepWaitForCache
	// stepWriteUnwritten: write the previous cycle's outcomes, and nothing
	// else, so that no handler's outcome is lost and none runs twice.
	stepWriteUnwritten
	// stepReportDiffBase: the last handled essence cannot be read, and
	// changes cannot be told apart; the cycle reports it and does nothing
	// else.
	stepReportDiffBase
	// stepFree: a deletion without this operator's finalizer; nothing to
	// do.
	stepFree
)

// triaged is the step of a cycle, and the cause it handles.
type triaged struct {
	Step step
	// Next is the member a handover goes to; WriteFirst: the previous
	// cycle's unwritten outcomes are written before the handover (the
	// next owner reads them). Why is why the replica stands by. Wait is
	// how long to wait for the cache.
	Next       string
	WriteFirst bool
	Why        string
	// PutBack: the stand-by puts the owner label back, once the
	// object's daemons have exited.
	PutBack bool
	Wait    time.Duration
	// Reason is the cause (stepHandle, stepFree); Initial: resume
	// handlers join.
	Reason  causes.Reason
	Initial bool
}

// triage picks the cycle's step. Whose object it is comes first: an
// object being handed over, or not this replica's, runs nothing more.
// Then the cache must show this process's last write, lest handlers run
// twice on the body from before it; then the previous cycle's unwritten
// outcomes go first. Only then is the cause detected, in Kopf's order.
// None of these asks the registry: the filters are the operator's code,
// asked only when the change handlers' part is planned (match.go).
func triage(f facts) triaged {
	switch {
	case f.Claim.Kind == ownership.HandOver:
		return triaged{Step: stepHandOver, Next: f.Claim.Next, WriteFirst: f.Unwritten}
	case f.Claim.Kind == ownership.StandBy:
		return triaged{Step: stepStandBy, Why: f.Claim.Why, PutBack: f.Claim.PutBack}
	case f.CacheWait > 0:
		return triaged{Step: stepWaitForCache, Wait: f.CacheWait}
	case f.Unwritten:
		return triaged{Step: stepWriteUnwritten}
	case f.DiffBaseInvalid && !f.Deleting:
		return triaged{Step: stepReportDiffBase}
	}
	reason, initial := causes.Detect(causes.Input{
		Deleting:    f.Deleting,
		Finalized:   f.Finalized,
		HasDiffBase: f.HasDiffBase,
		Diff:        f.Diff,
		Initial:     f.Initial,
	})
	t := triaged{Reason: reason, Initial: initial}
	if reason == causes.Free {
		t.Step = stepFree
	}
	return t
}

// syncsDaemons reports whether the object's daemons and timers follow its
// state in this cycle: they do whenever the object is this replica's to
// work on, consistent or not, as they read the latest object themselves.
func (t triaged) syncsDaemons() bool {
	return t.Step != stepHandOver && t.Step != stepStandBy
}
