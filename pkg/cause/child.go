package cause

import (
	"time"

	"github.com/kopf-go/kopf/pkg/diff"
	"github.com/kopf-go/kopf/pkg/indexing"
	"github.com/kopf-go/kopf/pkg/memo"
)

// ChildReason is why a child handler runs: what became of the child.
type ChildReason string

// The reasons child handlers see.
const (
	// ChildExisting: the child was there when the children's watch began,
	// at the operator's start or after a freeze or a pause.
	ChildExisting ChildReason = "existing"
	// ChildCreated: the child was created while the operator watched.
	ChildCreated ChildReason = "created"
	// ChildChanged: the child was changed (by hand, by another
	// controller, or by the operator itself).
	ChildChanged ChildReason = "changed"
	// ChildDeleted: the child is gone; the handler gets its last state.
	ChildDeleted ChildReason = "deleted"
)

// Child is what a child handler (handlers.OnChild) learns beside its
// owner and the child itself: what became of the child, and how.
type Child struct {
	// Reason is existing, created, changed or deleted.
	Reason ChildReason
	// HandlerID is the id of the handler being called.
	HandlerID string
	// Param is the value the handler was registered with (Param option).
	Param any
	// Body is the child as a JSON-like map, its last state if it is
	// deleted. Treat it as read-only.
	Body map[string]any
	// Old and New are the child before and after the change (without its
	// resourceVersion); for a handler of a field, the values of that
	// field. Old is nil for existing and created children, New for deleted
	// ones.
	Old, New any
	// Diff lists the changes from Old to New.
	Diff diff.Diff
	// Retry is the number of earlier attempts of this handler for this
	// change of the child.
	Retry int
	// Started is when the first attempt began.
	Started time.Time
	// Runtime is how long ago the first attempt began.
	Runtime time.Duration
	// Memo is the owner's memo, shared with its other handlers, daemons
	// and timers.
	Memo *memo.Memo
	// Indices are the operator's indices, by index handler id.
	Indices *indexing.Indices
}
