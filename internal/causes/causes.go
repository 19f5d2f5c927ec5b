// Package causes decides why a processing cycle happens (the object was
// created, updated, resumed after a restart, or is being deleted) from the
// object and the state the framework stored on it; it is pure logic.
package causes

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kopf-go/kopf/pkg/diff"
	"github.com/kopf-go/kopf/pkg/indexing"
	"github.com/kopf-go/kopf/pkg/memo"
	"github.com/kopf-go/kopf/pkg/patch"
)

// Object is a Kubernetes object, typed or unstructured (the same method set
// as controller-runtime's client.Object, without depending on it).
type Object interface {
	metav1.Object
	runtime.Object
}

// Reason is why a cycle happens. The first four select change handlers;
// the others only explain why nothing runs.
type Reason string

// The reasons, with Kopf's names.
const (
	Create Reason = "create"
	Update Reason = "update"
	Delete Reason = "delete"
	Resume Reason = "resume"
	NoOp   Reason = "noop"
	Free   Reason = "free"
	Gone   Reason = "gone"
)

// Title is how Kopf names the handling of a reason in its log lines
// ("Creation is processed: ...").
func (r Reason) Title() string {
	switch r {
	case Create:
		return "Creation"
	case Update:
		return "Updating"
	case Delete:
		return "Deletion"
	case Resume:
		return "Resuming"
	}
	return string(r)
}

// HandlesChanges reports whether change handlers run for this reason.
func (r Reason) HandlesChanges() bool {
	return r == Create || r == Update || r == Delete || r == Resume
}

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

// Cause is what a change handler learns about the cycle beside the object
// itself.
type Cause struct {
	// Reason is create, update, delete or resume. Resume handlers that join
	// an update or a deletion see that reason, as in Kopf.
	Reason Reason
	// HandlerID is the id of the handler being called.
	HandlerID string
	// Param is the value the handler was registered with (Param option).
	Param any
	// Body is the object as a JSON-like map. Treat it as read-only.
	Body map[string]any
	// Old and New are the last handled and the current essence; for a
	// handler of a field, the values of that field. Nil means absent.
	Old, New any
	// Diff lists the changes from Old to New.
	Diff diff.Diff
	// Retry is the number of earlier attempts of this handler for this cause.
	Retry int
	// Started is when the first attempt began.
	Started time.Time
	// Runtime is how long ago the first attempt began.
	Runtime time.Duration
	// Patch collects changes to the object; it is applied after the handler
	// returns, together with the framework's own changes.
	Patch *patch.Patch
	// Memo is the object's memo, shared with its other handlers, daemons
	// and timers for as long as this process knows the object.
	Memo *memo.Memo
	// Indices are the operator's indices, by index handler id.
	Indices *indexing.Indices

	// subhandlers collects what the handler registers as sub-handlers
	// (nil where sub-handlers cannot be registered).
	subhandlers *[]any
}

// AllowSubhandlers lets the handler that gets the cause register
// sub-handlers. (Functions, not methods: the cause is the users' type,
// and this is the engine's plumbing.)
func AllowSubhandlers(c *Cause) { c.subhandlers = &[]any{} }

// AddSubhandler registers a sub-handler (the engine's handler type) and
// reports whether sub-handlers can be registered here at all.
func AddSubhandler(c *Cause, h any) bool {
	if c.subhandlers == nil {
		return false
	}
	*c.subhandlers = append(*c.subhandlers, h)
	return true
}

// Subhandlers are the sub-handlers registered so far with the cause.
func Subhandlers(c *Cause) []any {
	if c.subhandlers == nil {
		return nil
	}
	return *c.subhandlers
}

// Watch event types, as on-event handlers see them. The initial listing
// (and the listing after a freeze) has no type, as in Kopf.
const (
	EventListed   = ""
	EventAdded    = "ADDED"
	EventModified = "MODIFIED"
	EventDeleted  = "DELETED"
)

// Event is what an on-event handler learns beside the object.
type Event struct {
	// Type is the watch event's type: EventListed, EventAdded,
	// EventModified or EventDeleted.
	Type string
	// HandlerID is the id of the handler being called.
	HandlerID string
	// Param is the value the handler was registered with.
	Param any
	// Body is the object as a JSON-like map. Treat it as read-only.
	Body map[string]any
	// Patch collects changes to the object (results go to status.<id>).
	Patch *patch.Patch
	// Memo and Indices are as in Cause.
	Memo    *memo.Memo
	Indices *indexing.Indices
}

// Spec returns the object's spec as a map, nil if it has none.
func (c *Cause) Spec() map[string]any {
	spec, _ := c.Body["spec"].(map[string]any)
	return spec
}

// Activity is what an activity handler (startup, cleanup, login, probe)
// learns: its retry count and timing, the operator's memo and indices.
type Activity struct {
	HandlerID string
	Param     any
	Retry     int
	Started   time.Time
	Runtime   time.Duration
	// Memo is the operator's memo: what startup handlers put there, every
	// object's memo starts with.
	Memo    *memo.Memo
	Indices *indexing.Indices
}
