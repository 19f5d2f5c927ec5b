package cycle

import (
	"github.com/kopf-go/kopf/internal/causes"
	"github.com/kopf-go/kopf/internal/registry"
)

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
	// NameNeedsFinalizer: the object's name must stay taken until this
	// replica is done with it (Settings.KeepNames).
	NameNeedsFinalizer bool
}

// matched is what the registry said, and the subject it said it of,
// which the change handlers then get.
type matched struct {
	matches
	subject *registry.Subject
}

// match asks the registry about the object under the triaged cause:
// whether a change handler prematches it, and whether a handler or a
// daemon needs the finalizer. The daemons' filters (the operator's code)
// are not asked when a handler or the name already needs the finalizer:
// their answer would change nothing.
func (r *Reconciler) match(o Object, f facts, t triaged) matched {
	var old any // a nil map must not become a non-nil interface value
	if f.OldEssence != nil {
		old = f.OldEssence
	}
	subject := &registry.Subject{
		Obj: o.Obj,
		Cause: &causes.Cause{Reason: t.Reason, Body: o.Body, Old: old, New: f.NewEssence, Diff: f.Diff,
			Patch: o.Patch, Memo: o.Mem.Memo(), Indices: r.s.Indices},
		Initial:        t.Initial,
		Deleting:       f.Deleting,
		FilterPanicked: FilterPanicked(r.label, o.Log),
	}
	m := matches{Visible: r.kind.Registered.Prematch(subject), NameNeedsFinalizer: r.s.KeepNames}
	m.HandlersNeedFinalizer = m.Visible && r.kind.Registered.RequiresFinalizer(subject)
	m.DaemonsNeedFinalizer = !m.HandlersNeedFinalizer && !m.NameNeedsFinalizer && r.daemons.RequireFinalizer(o)
	return matched{matches: m, subject: subject}
}
