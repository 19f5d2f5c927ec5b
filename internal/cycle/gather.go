package cycle

import (
	"fmt"
	"slices"
	"time"

	"github.com/kopf-go/kopf/internal/ownership"
	"github.com/kopf-go/kopf/pkg/diff"
)

// facts are what a cycle knows of its object before anything is done.
type facts struct {
	// Claim is what this replica may do with the object (ownership).
	Claim ownership.Claim
	// CacheWait is how long the cache may still lag behind this process's
	// last write of the object (consistency.go); zero: it does not.
	CacheWait time.Duration
	// Unwritten: the previous cycle's outcomes could not be written.
	Unwritten bool
	// Deleting: the object has a deletionTimestamp; Finalized: it has this
	// operator's finalizer.
	Deleting, Finalized bool
	// DiffBaseInvalid: the stored last handled essence cannot be read
	// (DiffBaseErr says why).
	DiffBaseInvalid bool
	DiffBaseErr     error
	// HasDiffBase: there is a last handled essence (stored and readable,
	// or kept in memory because it was too large to store).
	HasDiffBase bool
	// NewEssence is the object's essence now; OldEssence the last handled
	// one (nil: none, or unreadable).
	NewEssence, OldEssence map[string]any
	// Diff is the change from the last handled essence to the current one.
	Diff diff.Diff
	// Initial: the object was first seen in this process's initial listing
	// and no cause of it has been fully handled yet (resume handlers join).
	Initial bool
}

// gather collects what the cycle knows of its object before anything is
// done: whose it is, whether the cache lags behind this process's last
// write, unwritten outcomes, and the change since the last handled
// essence.
func (r *Reconciler) gather(o Object, now time.Time) facts {
	newEssence := r.s.DiffBase.Build(o.Body, r.kind.Registered.ExtraFields())
	r.s.Progress.Clear(newEssence)
	deleting := o.Obj.GetDeletionTimestamp() != nil
	oldEssence, err := r.lastHandled(o, deleting)
	return facts{
		Claim:           r.claim(o, now),
		CacheWait:       r.consistencyWait(o, now),
		Unwritten:       o.Mem.Unwritten != nil,
		Deleting:        deleting,
		Finalized:       slices.Contains(o.Obj.GetFinalizers(), r.s.Finalizer),
		DiffBaseInvalid: err != nil,
		DiffBaseErr:     err,
		HasDiffBase:     oldEssence != nil,
		NewEssence:      newEssence,
		OldEssence:      oldEssence,
		Diff:            diff.Compute(asAny(oldEssence), newEssence),
		Initial:         o.Mem.NoticedByListing && !o.Mem.FullyHandledOnce,
	}
}

// claim is what this replica may do with the object: the ownership's
// answer, unless this process handed the object over at a newer version
// than the one read. A cache whose watch lags (a stalled stream) may show
// such a version after the handover, with this member's owner label
// still on it: the ownership would take it for this member's, and its
// handlers would run beside the next owner's (an object being deleted
// meanwhile, whose owner completes the deletion, as one chaos run
// showed). The cycle stands by until the cache shows the handover.
func (r *Reconciler) claim(o Object, now time.Time) ownership.Claim {
	if at := o.Mem.HandedOverAt; at != "" {
		if !versionReached(o.Obj.GetResourceVersion(), at) {
			return ownership.Claim{Kind: ownership.StandBy,
				Why: fmt.Sprintf("this replica handed it over at version %s, and the cache shows the older version %s", at, o.Obj.GetResourceVersion())}
		}
		o.Mem.HandedOverAt = ""
	}
	return r.own.Claim(o.Obj, now)
}

// lastHandled reads the last handled essence: the stored one, or the one
// kept in memory when it was too large to store. An unreadable one is an
// error unless the object is being deleted (deletion does not need it).
func (r *Reconciler) lastHandled(o Object, deleting bool) (map[string]any, error) {
	old, err := r.s.DiffBase.Fetch(o.Body)
	if err != nil {
		if !deleting {
			return nil, err
		}
		old = nil
	}
	if o.Mem.OversizedEssence != nil {
		old = o.Mem.OversizedEssence
	}
	if old != nil {
		r.s.Progress.Clear(old)
	}
	return old, nil
}

// asAny keeps a nil map from becoming a non-nil interface value.
func asAny(m map[string]any) any {
	if m == nil {
		return nil
	}
	return m
}
