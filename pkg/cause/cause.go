// Package cause holds what a handler learns beside its object, one type
// per kind of handler, as Kopf's causes: a change handler's Change (why it
// runs: create, update, delete or resume, with the diff), an on-event
// handler's Event, a daemon's or timer's Daemon, and an activity's
// (startup, cleanup, login, probe) Activity. The engine fills them; the
// handlers in package handlers receive them, and pkg/handlertest builds
// them for unit tests.
package cause

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kopf-go/kopf/pkg/diff"
	"github.com/kopf-go/kopf/pkg/indexing"
	"github.com/kopf-go/kopf/pkg/memo"
	"github.com/kopf-go/kopf/pkg/patch"
)

// Object is a Kubernetes object, typed or unstructured: the method set of
// controller-runtime's client.Object, so that either converts to the
// other.
type Object interface {
	metav1.Object
	runtime.Object
}

// Reason is why a change handler runs.
type Reason string

// The reasons change handlers see, with Kopf's names.
const (
	Create Reason = "create"
	Update Reason = "update"
	Delete Reason = "delete"
	Resume Reason = "resume"
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

// HandlesChanges reports whether change handlers run for this reason: one
// of Create, Update, Delete and Resume (the engine has reasons of its own
// for cycles that run none).
func (r Reason) HandlesChanges() bool {
	return r == Create || r == Update || r == Delete || r == Resume
}

// Change is what a change handler (OnCreate, OnUpdate, OnDelete, OnResume,
// OnField, a sub-handler, an index) learns about the cycle beside the
// object itself (Kopf's ChangingCause).
type Change struct {
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
}

// Spec returns the object's spec as a map, nil if it has none.
func (c *Change) Spec() map[string]any {
	spec, _ := c.Body["spec"].(map[string]any)
	return spec
}

// Watch event types, as on-event handlers see them in Event.Type. The
// initial listing (and the listing after a freeze) has no type, as in
// Kopf.
const (
	EventListed   = ""
	EventAdded    = "ADDED"
	EventModified = "MODIFIED"
	EventDeleted  = "DELETED"
)

// Event is what an on-event handler learns beside the object (Kopf's
// WatchingCause): the raw watch event.
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
	// Memo and Indices are as in Change.
	Memo    *memo.Memo
	Indices *indexing.Indices
}

// Activity is what an activity handler (startup, cleanup, login, probe)
// learns (Kopf's ActivityCause): its retry count and timing, the
// operator's memo and indices.
type Activity struct {
	// HandlerID is the id of the handler being called.
	HandlerID string
	// Param is the value the handler was registered with.
	Param any
	// Retry is the number of earlier attempts of this handler.
	Retry int
	// Started is when the first attempt began.
	Started time.Time
	// Runtime is how long ago the first attempt began.
	Runtime time.Duration
	// Memo is the operator's memo: what startup handlers put there, every
	// object's memo starts with.
	Memo *memo.Memo
	// Indices are the operator's indices, by index handler id.
	Indices *indexing.Indices
}
