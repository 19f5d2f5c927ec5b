package cycle

import (
	"context"
	"fmt"
	"time"

	"github.com/kopf-go/kopf/internal/execution"
	"github.com/kopf-go/kopf/internal/registry"
	"github.com/kopf-go/kopf/internal/write"
	"github.com/kopf-go/kopf/pkg/fields"
	"github.com/kopf-go/kopf/pkg/patch"
)

// effects are what carrying a plan out leaves for the write.
type effects struct {
	// Patch is what goes to the object; Finalizer what happens to the
	// operator's finalizer.
	Patch     *patch.Patch
	Finalizer write.Finalizer
	// Essence is the new last handled essence in Patch, if the cycle
	// stores one (the write keeps an oversized one out).
	Essence map[string]any
	// Left is what the handlers and daemons left.
	Left leftover
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

// logPrecision is what measured delays are rounded to in log lines: the
// clock's nanosecond noise is not worth printing ("1.5", not "1.499999").
const logPrecision = time.Millisecond

// carryOut carries out the change handlers' part of a plan: the standing,
// the finalizer, the daemons' stop, one round of the change handlers, and
// the finalizer's release after them.
func (r *Reconciler) carryOut(ctx context.Context, o Object, f facts, pl plan, subject *registry.Subject, now time.Time) effects {
	eff := effects{Patch: o.Patch}
	if pl.Stealth {
		// No handler of it can retry or fail any more.
		r.memories.Stand(o.Mem, execution.Standing{})
	}
	switch eff.Finalizer = pl.Finalizer; eff.Finalizer {
	case write.AddFinalizer:
		o.Local.V(1).Info("Adding the finalizer, thus preventing the actual deletion.")
		return eff
	case write.RemoveFinalizer:
		o.Local.V(1).Info("Removing the finalizer, as there are no handlers requiring it.")
		return eff
	}
	if pl.StopDaemons {
		b := r.daemons.Stop(o)
		eff.Left.Blocking, eff.Left.Polling = len(b.Names) > 0, b.Polling
		for _, name := range b.Lingering {
			o.Local.V(1).Info(fmt.Sprintf("%s is still exiting. The next check is in %s seconds.", name, execution.Seconds(b.Polling.Round(logPrecision))))
		}
	}
	switch {
	case pl.RunHandlers:
		if o.shared && len(r.kind.Registered.Select(subject)) > 0 {
			// A handler runs, and gets the cycle's own copy. Most rounds
			// run none (a takeover's resumes of objects without resume
			// handlers): they only read the progress. The filters asked
			// here run no code, or the copy was made before the match.
			o = r.private(o)
			subject.Obj, subject.Cause.Body = o.Obj, o.Body
		}
		res := r.handlers.Run(ctx, RoundInput{Object: o, Subject: subject, Now: now, Report: r.report})
		eff.Left.Pending, eff.Left.Delay = !res.Done, res.Delay
		if res.Done {
			if f.OldEssence == nil || !fields.Equal(f.OldEssence, f.NewEssence) {
				r.s.DiffBase.Store(o.Body, o.Patch, f.NewEssence)
				eff.Essence = f.NewEssence
			}
			o.Mem.FullyHandledOnce = true
		}
		r.memories.Stand(o.Mem, res.Standing)
		r.keepConditions(ctx, o, f, pl, res, now)
	case pl.NoOp:
		o.Log.V(1).Info("Something has changed, but we are not interested (the essence is the same).")
	}
	if eff.Finalizer = settle(pl, eff.Left); eff.Finalizer == write.RemoveFinalizer {
		o.Local.V(1).Info("Removing the finalizer, thus allowing the actual deletion.")
	}
	return eff
}

// settle decides the finalizer once the handlers ran: a deleted object's
// finalizer goes when its deletion handlers are done and its daemons have
// exited.
func settle(pl plan, l leftover) write.Finalizer {
	if pl.Finalizer != write.KeepFinalizer {
		return pl.Finalizer
	}
	if pl.Release && !l.Pending && !l.Blocking {
		return write.RemoveFinalizer
	}
	return write.KeepFinalizer
}
