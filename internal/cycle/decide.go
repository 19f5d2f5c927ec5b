package cycle

import (
	"github.com/kopf-go/kopf/internal/causes"
	"github.com/kopf-go/kopf/internal/write"
)

// plan is what the change handlers' part of a cycle does: a pure
// function of the facts and the registry's matches (decide), table-tested
// rule by rule against handlers.md and daemons.md.
type plan struct {
	Reason  causes.Reason
	Initial bool
	// Stealth: no change handler matches; the object's standing is reset.
	Stealth bool
	// Finalizer is added or removed in a cycle of its own: nothing else
	// happens in it.
	Finalizer write.Finalizer
	// StopDaemons: the object is being deleted; its daemons are told to
	// stop before the deletion handlers run, so that polite ones exit
	// meanwhile.
	StopDaemons bool
	// RunHandlers: the change handlers of the cause run; NoOp: nothing has
	// changed that they care about.
	RunHandlers bool
	NoOp        bool
	// Release: the finalizer goes once the deletion handlers are done and
	// the daemons have exited (settle, carry.go).
	Release bool
}

// decide plans the change handlers' part of a cycle of the triaged cause:
// the finalizer first (added when a mandatory delete handler, a daemon or
// the object's name needs it, removed when nothing does, in a cycle of
// its own), then the
// daemons' stop of a deleted object, then the handlers.
func decide(f facts, t triaged, m matches) plan {
	p := plan{Reason: t.Reason, Initial: t.Initial, Stealth: !m.Visible}
	required := m.Visible && m.HandlersNeedFinalizer || m.DaemonsNeedFinalizer || m.NameNeedsFinalizer
	switch {
	case required && !f.Finalized && !f.Deleting:
		p.Finalizer = write.AddFinalizer
		return p
	case !required && f.Finalized:
		p.Finalizer = write.RemoveFinalizer
		return p
	}
	p.StopDaemons = f.Deleting
	p.RunHandlers = m.Visible && t.Reason.HandlesChanges()
	p.NoOp = m.Visible && t.Reason == causes.NoOp
	p.Release = f.Deleting && f.Finalized
	return p
}
