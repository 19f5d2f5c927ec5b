// Package causes decides why a processing cycle happens (the object was
// created, updated, resumed after a restart, or is being deleted) from the
// object and the state the framework stored on it; it is pure logic. The
// causes that handlers get are pkg/cause's; the engine names them here as
// it always has.
package causes

import (
	"context"

	"github.com/kopf-go/kopf/pkg/cause"
	"github.com/kopf-go/kopf/pkg/diff"
)

// The engine's names of the public causes (pkg/cause).
type (
	// Object is a Kubernetes object, typed or unstructured.
	Object = cause.Object
	// Reason is why a cycle happens. The first four select change
	// handlers; the engine's own (NoOp, Free, Gone) explain why nothing
	// runs.
	Reason = cause.Reason
	// Cause is what a change handler learns.
	Cause = cause.Change
	// Event is what an on-event handler learns.
	Event = cause.Event
	// Activity is what an activity handler learns.
	Activity = cause.Activity
)

// The reasons, with Kopf's names.
const (
	Create        = cause.Create
	Update        = cause.Update
	Delete        = cause.Delete
	Resume        = cause.Resume
	NoOp   Reason = "noop"
	Free   Reason = "free"
	Gone   Reason = "gone"
)

// Watch event types (cause.Event.Type).
const (
	EventListed   = cause.EventListed
	EventAdded    = cause.EventAdded
	EventModified = cause.EventModified
	EventDeleted  = cause.EventDeleted
)

// Input is what the cause detection looks at.
type Input struct {
	// Gone: the object does not exist any more.
	Gone bool
	// Deleting: the object has a deletionTimestamp.
	Deleting bool
	// Finalized: the object carries this operator's finalizer.
	Finalized bool
	// HasDiffBase: a last handled essence is stored on the object.
	HasDiffBase bool
	// Diff: the difference between the stored and the current essence.
	Diff diff.Diff
	// Initial: the object was found by this process's initial listing and
	// has not been fully handled by this process yet.
	Initial bool
}

// Detect returns the reason, and whether the cause counts as initial (so
// that resume handlers join it). The checks and their order are Kopf's:
// creation never mixes with resuming, and deletion needs our finalizer.
func Detect(in Input) (Reason, bool) {
	switch {
	case in.Gone:
		return Gone, in.Initial
	case in.Deleting && !in.Finalized:
		return Free, in.Initial
	case in.Deleting:
		return Delete, in.Initial
	case !in.HasDiffBase:
		return Create, false
	case len(in.Diff) == 0 && in.Initial:
		return Resume, true
	case len(in.Diff) == 0:
		return NoOp, in.Initial
	}
	return Update, in.Initial
}

// subhandlersKey keys a change handler's call's Subhandlers in its context.
type subhandlersKey struct{}

// Subhandlers collects what a change handler registers as sub-handlers
// (the engine's handler type) during its call. It rides in the call's
// context, as Kopf's sub-handlers' registry rides in a context variable,
// so that the public cause carries no plumbing.
type Subhandlers struct{ list []any }

// WithSubhandlers returns a context in which sub-handlers can be
// registered, and what collects them.
func WithSubhandlers(ctx context.Context) (context.Context, *Subhandlers) {
	s := &Subhandlers{}
	return context.WithValue(ctx, subhandlersKey{}, s), s
}

// AddSubhandler registers a sub-handler in the context's collector and
// reports whether sub-handlers can be registered there at all.
func AddSubhandler(ctx context.Context, h any) bool {
	s := SubhandlersOf(ctx)
	if s == nil {
		return false
	}
	s.list = append(s.list, h)
	return true
}

// SubhandlersOf is the context's collector, nil if it has none.
func SubhandlersOf(ctx context.Context) *Subhandlers {
	s, _ := ctx.Value(subhandlersKey{}).(*Subhandlers)
	return s
}

// List is what was registered so far, in order.
func (s *Subhandlers) List() []any { return s.list }
