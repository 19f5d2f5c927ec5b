package handlertest

import (
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kopf-go/kopf/internal/posting"
)

// Events records the Events that handlers post (handlers.PostEvent,
// PostInfo, PostWarning, PostException) in a Context made with
// RecordEvents, instead of posting them: a test asserts them without an
// API server.
//
//	events := &handlertest.Events{}
//	ctx := handlertest.Context(nil, handlertest.RecordEvents(events))
//	_, err := myHandler(ctx, obj, handlertest.Create(obj))
//	got := events.Posted() // [{Type: "Normal", Reason: "Created", ...}]
//
// The engine's gates of posting (Options.Posting: disabled, or a level)
// do not apply: every Event is recorded, with the type it was posted with.
type Events struct {
	// Scheme names the kinds of typed objects whose TypeMeta is empty;
	// nil: client-go's, which knows the built-in kinds.
	Scheme *runtime.Scheme

	mu     sync.Mutex
	posted []Event
}

// Event is one recorded Event, about one object: an Event posted about a
// list or handlers.Objects is one Event per object, as the engine posts it.
type Event struct {
	// Type is "Normal", "Warning", "Error" or "Debug" (or a custom type).
	Type, Reason, Message string
	// The object it is about.
	APIVersion, Kind, Namespace, Name string
	UID                               types.UID
}

// Event records an Event about each of objs; objects that cannot be
// referred to (no kind, not an object) give the error the engine would log.
func (e *Events) Event(objs runtime.Object, eventType, reason, message string) error {
	refs, err := (&posting.Poster{Scheme: e.Scheme}).Refs(objs)
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, ref := range refs {
		e.posted = append(e.posted, Event{Type: eventType, Reason: reason, Message: message,
			APIVersion: ref.GVK.GroupVersion().String(), Kind: ref.GVK.Kind,
			Namespace: ref.Namespace, Name: ref.Name, UID: ref.UID})
	}
	return err
}

// Posted returns the Events recorded so far, in the order of posting.
func (e *Events) Posted() []Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]Event(nil), e.posted...)
}

// ContextOption adds to a handler's Context.
type ContextOption func(*contextParts)

type contextParts struct {
	events *Events
}

// RecordEvents makes the Context's Events land in events.
func RecordEvents(events *Events) ContextOption {
	return func(p *contextParts) { p.events = events }
}
