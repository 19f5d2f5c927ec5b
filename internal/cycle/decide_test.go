package cycle

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kopf-go/kopf/internal/causes"
	"github.com/kopf-go/kopf/internal/ownership"
	"github.com/kopf-go/kopf/internal/write"
	"github.com/kopf-go/kopf/pkg/diff"
)

// decided is the whole decision of one cycle: the step and cause, the
// plan, what the registry was asked about, the finalizer once the
// handlers ran, and the requeue.
type decided struct {
	// Triaged is the step and the cause; a row of the change handlers'
	// part says only its plan's Reason and Initial.
	Triaged triaged
	Plan    plan
	// Asked is the cause the registry was asked about ("": not asked).
	Asked     causes.Reason
	Finalizer write.Finalizer
	Requeue   requeue
}

// TestDecide walks the decision of one cycle (triage, decide, settle and
// requeueAfter) through the rules of
// docs/handlers.md (and docs/daemons.md for the daemons' part); each row
// names the rule it checks.
func TestDecide(t *testing.T) {
	changed := diff.Diff{{Op: diff.Change, Field: []string{"spec", "x"}, Old: 1, New: 2}}
	handled := facts{HasDiffBase: true}
	visible := matches{Visible: true}
	deleting := facts{Deleting: true, Finalized: true, HasDiffBase: true}
	withDelete := matches{Visible: true, HandlersNeedFinalizer: true}
	keepsName := matches{Visible: true, NameNeedsFinalizer: true}
	tests := []struct {
		rule     string
		facts    facts
		matches  matches
		left     leftover
		written  bool
		conflict bool
		want     decided
	}{{
		rule:  "handlers.md, The handler kinds: OnCreate runs when the object has no last handled state",
		facts: facts{}, matches: visible, written: true,
		want: decided{Plan: plan{Reason: causes.Create, RunHandlers: true}, Asked: causes.Create},
	}, {
		rule:  "handlers.md, The handler kinds: creation never joins resume handlers, even in the initial listing",
		facts: facts{Initial: true}, matches: visible, written: true,
		want: decided{Plan: plan{Reason: causes.Create, RunHandlers: true}, Asked: causes.Create},
	}, {
		rule:  "handlers.md, The handler kinds: OnUpdate runs when the essence changed",
		facts: facts{HasDiffBase: true, Diff: changed}, matches: visible, written: true,
		want: decided{Plan: plan{Reason: causes.Update, RunHandlers: true}, Asked: causes.Update},
	}, {
		rule:  "handlers.md, The handler kinds: OnResume runs once per process for objects that exist when it starts",
		facts: facts{HasDiffBase: true, Initial: true}, matches: visible, written: true,
		want: decided{Plan: plan{Reason: causes.Resume, Initial: true, RunHandlers: true}, Asked: causes.Resume},
	}, {
		rule:  "handlers.md, The handler kinds: resume handlers join the cause the object has then (update if it changed meanwhile)",
		facts: facts{HasDiffBase: true, Initial: true, Diff: changed}, matches: visible, written: true,
		want: decided{Plan: plan{Reason: causes.Update, Initial: true, RunHandlers: true}, Asked: causes.Update},
	}, {
		rule:  "handlers.md, The handler kinds: nothing changed in the essence (no-op), no handler runs",
		facts: handled, matches: visible,
		want: decided{Plan: plan{Reason: causes.NoOp, NoOp: true}, Asked: causes.NoOp},
	}, {
		rule:  "handlers.md, Deletion and the finalizer: OnDelete runs when the object is being deleted; daemons are told to stop first, and the finalizer goes when the delete handlers are done",
		facts: deleting, matches: withDelete, written: true,
		want: decided{Plan: plan{Reason: causes.Delete, StopDaemons: true, RunHandlers: true, Release: true},
			Asked: causes.Delete, Finalizer: write.RemoveFinalizer},
	}, {
		rule:  "handlers.md, Deletion and the finalizer: deletion waits while a delete handler is pending",
		facts: deleting, matches: withDelete, left: leftover{Pending: true, Delay: 10 * time.Second}, written: true,
		want: decided{Plan: plan{Reason: causes.Delete, StopDaemons: true, RunHandlers: true, Release: true},
			Asked: causes.Delete, Requeue: requeue{After: 10 * time.Second, Log: sleeping}},
	}, {
		rule:    "daemons.md, Deletion waits for daemons: the finalizer stays while daemons exit; slow polling of those that do not ask for a reconcile",
		facts:   deleting,
		matches: matches{Visible: true, DaemonsNeedFinalizer: true}, left: leftover{Blocking: true, Polling: time.Minute},
		want: decided{Plan: plan{Reason: causes.Delete, StopDaemons: true, RunHandlers: true, Release: true},
			Asked: causes.Delete, Requeue: requeue{After: time.Minute}},
	}, {
		rule:    "daemons.md, Deletion waits for daemons: the finalizer goes once they have exited and the delete handlers are done",
		facts:   deleting,
		matches: matches{Visible: true, DaemonsNeedFinalizer: true}, left: leftover{},
		want: decided{Plan: plan{Reason: causes.Delete, StopDaemons: true, RunHandlers: true, Release: true},
			Asked: causes.Delete, Finalizer: write.RemoveFinalizer},
	}, {
		rule:  "handlers.md, Deletion and the finalizer: a deletion without our finalizer is not ours (free): nothing runs, filters are not asked",
		facts: facts{Deleting: true, HasDiffBase: true}, matches: withDelete,
		want: decided{Triaged: triaged{Step: stepFree, Reason: causes.Free}},
	}, {
		rule:    "handlers.md, Deletion and the finalizer: an Optional() delete handler runs only if the finalizer is there for another reason",
		facts:   deleting,
		matches: matches{Visible: true, DaemonsNeedFinalizer: true}, written: true,
		want: decided{Plan: plan{Reason: causes.Delete, StopDaemons: true, RunHandlers: true, Release: true},
			Asked: causes.Delete, Finalizer: write.RemoveFinalizer},
	}, {
		rule:  "handlers.md, Filters: an object that matches no change handler is left alone (stealth mode): no finalizer, no handlers",
		facts: facts{}, matches: matches{},
		want: decided{Plan: plan{Reason: causes.Create, Stealth: true}, Asked: causes.Create},
	}, {
		rule:  "handlers.md, Deletion and the finalizer: the engine adds the finalizer in a cycle of its own, before any handler runs",
		facts: facts{}, matches: withDelete,
		want: decided{Plan: plan{Reason: causes.Create, Finalizer: write.AddFinalizer}, Asked: causes.Create, Finalizer: write.AddFinalizer},
	}, {
		rule:  "daemons.md, Deletion waits for daemons: a matching daemon puts the finalizer, even where no change handler matches",
		facts: handled, matches: matches{DaemonsNeedFinalizer: true},
		want: decided{Plan: plan{Reason: causes.NoOp, Stealth: true, Finalizer: write.AddFinalizer}, Asked: causes.NoOp, Finalizer: write.AddFinalizer},
	}, {
		rule:  "handlers.md, Deletion and the finalizer: the finalizer is removed as soon as no handler needs it any more",
		facts: facts{Finalized: true, HasDiffBase: true, Diff: changed}, matches: visible,
		want: decided{Plan: plan{Reason: causes.Update, Finalizer: write.RemoveFinalizer}, Asked: causes.Update, Finalizer: write.RemoveFinalizer},
	}, {
		rule:  "handlers.md, Filters: an object that stops matching is left alone, and its finalizer goes",
		facts: facts{Finalized: true, HasDiffBase: true}, matches: matches{},
		want: decided{Plan: plan{Reason: causes.NoOp, Stealth: true, Finalizer: write.RemoveFinalizer}, Asked: causes.NoOp, Finalizer: write.RemoveFinalizer},
	}, {
		rule:  "handlers.md, Deletion and the finalizer: a deleted object that no handler needs any more loses the finalizer at once",
		facts: deleting, matches: visible,
		want: decided{Plan: plan{Reason: causes.Delete, Finalizer: write.RemoveFinalizer}, Asked: causes.Delete, Finalizer: write.RemoveFinalizer},
	}, {
		rule:  "sharding.md, One object, one name: a ring member adds the finalizer that no handler needs, in a cycle of its own, before any handler runs",
		facts: facts{}, matches: keepsName,
		want: decided{Plan: plan{Reason: causes.Create, Finalizer: write.AddFinalizer}, Asked: causes.Create, Finalizer: write.AddFinalizer},
	}, {
		rule:  "sharding.md, One object, one name: the finalizer stays while the object lives",
		facts: facts{Finalized: true, HasDiffBase: true, Diff: changed}, matches: keepsName, written: true,
		want: decided{Plan: plan{Reason: causes.Update, RunHandlers: true}, Asked: causes.Update},
	}, {
		rule:  "sharding.md, One object, one name: an object that matches no change handler keeps it too",
		facts: facts{Finalized: true, HasDiffBase: true}, matches: matches{NameNeedsFinalizer: true},
		want: decided{Plan: plan{Reason: causes.NoOp, Stealth: true}, Asked: causes.NoOp},
	}, {
		rule:  "sharding.md, One object, one name: at deletion it goes once the handlers of the object are done",
		facts: deleting, matches: keepsName, written: true,
		want: decided{Plan: plan{Reason: causes.Delete, StopDaemons: true, RunHandlers: true, Release: true},
			Asked: causes.Delete, Finalizer: write.RemoveFinalizer},
	}, {
		rule:  "sharding.md, One object, one name: at deletion it stays while a handler of the object is pending",
		facts: deleting, matches: keepsName, left: leftover{Pending: true, Delay: time.Second}, written: true,
		want: decided{Plan: plan{Reason: causes.Delete, StopDaemons: true, RunHandlers: true, Release: true},
			Asked: causes.Delete, Requeue: requeue{After: time.Second, Log: sleeping}},
	}, {
		rule:  "handlers.md, Errors and retries: a handler retried after a delay is requeued after it",
		facts: facts{HasDiffBase: true, Diff: changed}, matches: visible, left: leftover{Pending: true, Delay: 5 * time.Second}, written: true,
		want: decided{Plan: plan{Reason: causes.Update, RunHandlers: true}, Asked: causes.Update,
			Requeue: requeue{After: 5 * time.Second, Log: sleeping}},
	}, {
		rule:  "handlers.md, Errors and retries: a handler due at once after a write sleeps not: the write's event starts the next cycle",
		facts: facts{HasDiffBase: true, Diff: changed}, matches: visible, left: leftover{Pending: true}, written: true,
		want: decided{Plan: plan{Reason: causes.Update, RunHandlers: true}, Asked: causes.Update,
			Requeue: requeue{Log: sleepSkipped}},
	}, {
		rule:  "handlers.md, Errors and retries: a handler due at once after a cycle that wrote nothing is requeued at once",
		facts: facts{HasDiffBase: true, Diff: changed}, matches: visible, left: leftover{Pending: true},
		want: decided{Plan: plan{Reason: causes.Update, RunHandlers: true}, Asked: causes.Update,
			Requeue: requeue{After: soon, Log: sleeping}},
	}, {
		rule:  "handlers.md, When the object's stored state is broken: a conflict on the finalizer write is decided again in the next cycle",
		facts: facts{}, matches: withDelete, conflict: true,
		want: decided{Plan: plan{Reason: causes.Create, Finalizer: write.AddFinalizer}, Asked: causes.Create, Finalizer: write.AddFinalizer,
			Requeue: requeue{After: soon}},
	}, {
		rule:  "handlers.md, When the object's stored state is broken: an unreadable last handled configuration runs no change handlers",
		facts: facts{DiffBaseInvalid: true, Finalized: true}, matches: withDelete,
		want: decided{Triaged: triaged{Step: stepReportDiffBase}},
	}, {
		rule:  "handlers.md, When the object's stored state is broken: with an unreadable last handled configuration, deletion still works",
		facts: facts{Deleting: true, Finalized: true, DiffBaseInvalid: true}, matches: withDelete, written: true,
		want: decided{Plan: plan{Reason: causes.Delete, StopDaemons: true, RunHandlers: true, Release: true},
			Asked: causes.Delete, Finalizer: write.RemoveFinalizer},
	}, {
		rule:  "sharding.md, Handover: the old owner lets go first: an object handed over runs no handler, whatever changed",
		facts: facts{Claim: ownership.Claim{Kind: ownership.HandOver, Next: "m-b"}, Diff: changed, CacheWait: time.Second}, matches: withDelete,
		want: decided{Triaged: triaged{Step: stepHandOver, Next: "m-b"}},
	}, {
		rule:  "sharding.md, Details and decisions: unwritten outcomes go first, before the handover",
		facts: facts{Claim: ownership.Claim{Kind: ownership.HandOver, Next: "m-b"}, Unwritten: true}, matches: withDelete,
		want: decided{Triaged: triaged{Step: stepHandOver, Next: "m-b", WriteFirst: true}},
	}, {
		rule:  "sharding.md, The assigner: an object whose owner label was edited by hand is stood by, even while deleted",
		facts: facts{Claim: ownership.Claim{Kind: ownership.StandBy, Why: "edited"}, Deleting: true, Finalized: true}, matches: withDelete,
		want: decided{Triaged: triaged{Step: stepStandBy, Why: "edited"}},
	}, {
		rule:  "ARCHITECTURE.md, The flow of one reconcile: no change handler runs on a body older than this process's last write",
		facts: facts{CacheWait: 2 * time.Second, Unwritten: true, Diff: changed, HasDiffBase: true}, matches: visible,
		want: decided{Triaged: triaged{Step: stepWaitForCache, Wait: 2 * time.Second}},
	}, {
		rule:  "handlers.md, When the object's stored state is broken: a failed write's changes are written first in the next cycle, and nothing else",
		facts: facts{Unwritten: true, DiffBaseInvalid: true}, matches: visible,
		want: decided{Triaged: triaged{Step: stepWriteUnwritten}},
	}}
	for _, tt := range tests {
		if tt.want.Triaged == (triaged{}) {
			tt.want.Triaged = triaged{Reason: tt.want.Plan.Reason, Initial: tt.want.Plan.Initial}
		}
		var got decided
		got.Triaged = triage(tt.facts)
		if got.Triaged.syncsDaemons() != (tt.facts.Claim.Kind == ownership.Work) {
			t.Errorf("%s: the daemons follow the object: %v, want them to whenever it is this replica's", tt.rule, got.Triaged.syncsDaemons())
		}
		if got.Triaged.Step == stepHandle {
			// Only the change handlers' part asks the registry (match.go).
			got.Asked = got.Triaged.Reason
			got.Plan = decide(tt.facts, got.Triaged, tt.matches)
			got.Finalizer = settle(got.Plan, tt.left)
		}
		got.Requeue = requeueAfter(tt.left, tt.written, tt.conflict)
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s: -want +got:\n%s", tt.rule, diff)
		}
	}
}
