// Package lowlevel handles the raw watch events of one kind on the run's
// informer: the indices kept, and the on-event handlers called.
package lowlevel

import (
	"context"
	"fmt"
	"github.com/kopf-go/kopf/internal/mergepatch"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/internal/causes"
	"github.com/kopf-go/kopf/internal/contain"
	"github.com/kopf-go/kopf/internal/cycle"
	"github.com/kopf-go/kopf/internal/daemons"
	"github.com/kopf-go/kopf/internal/execution"
	"github.com/kopf-go/kopf/internal/memory"
	"github.com/kopf-go/kopf/internal/metrics"
	"github.com/kopf-go/kopf/internal/objects"
	"github.com/kopf-go/kopf/internal/ownership"
	"github.com/kopf-go/kopf/internal/posting"
	"github.com/kopf-go/kopf/internal/registry"
	"github.com/kopf-go/kopf/pkg/indexing"
	"github.com/kopf-go/kopf/pkg/patch"
)

// Kind is what the low-level handlers of one kind need of it.
type Kind struct {
	Registered *registry.Kind
	Objects    objects.Kind
	// Label is the kind as the metrics name it.
	Label    string
	Memories *memory.Store
	Own      ownership.Ownership
	Indices  *indexing.Indices
	Clock    clock.PassiveClock
	// Backoff is the retry delay of index handlers after arbitrary errors.
	Backoff time.Duration
	// HandedOver reports (once) whether a DELETED event is an object that
	// this member handed over rather than one that was deleted.
	HandedOver func(uid types.UID) bool
	// Accept, if set, tells which objects of the informer are this
	// replica's: an adoption cache holds every object of a retired ring
	// member, each adopter's and the others'.
	Accept func(obj client.Object) bool
	// Reconciles: the kind has a controller, whose reconcile forgets a
	// deleted object; else the DELETED event forgets it.
	Reconciles bool
	// Context is the context a handler runs in, with its logger.
	Context func(ctx context.Context, log logr.Logger) context.Context
	// Apply writes an on-event handler's patch (the daemons' host's).
	Apply func(ctx context.Context, ref daemons.Ref, p *patch.Patch) error
}

// Handler handles the raw watch events of one kind, in order, before the
// controller sees them: it keeps the kind's indices, and calls the on-event
// handlers. It is registered on the run's informer, so that the controllers
// can wait until the first listing is indexed.
type Handler struct {
	k   Kind
	ctx context.Context
	log logr.Logger
	// failures remembers index handlers that failed, by index id and
	// object: excluded for good (permanent) or until a time (temporary).
	mu       sync.Mutex
	failures map[string]indexFailure
}

type indexFailure struct {
	state *execution.HandlerState
	until time.Time // zero: for good
}

// OnAdd handles listed and added objects.
func (l *Handler) OnAdd(obj any, isInInitialList bool) {
	eventType := causes.EventAdded
	if isInInitialList {
		eventType = causes.EventListed
	}
	l.handle(obj, eventType)
}

// OnUpdate handles modified objects.
func (l *Handler) OnUpdate(_, obj any) { l.handle(obj, causes.EventModified) }

// OnDelete handles deleted objects.
func (l *Handler) OnDelete(obj any) {
	if tombstone, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	l.handle(obj, causes.EventDeleted)
}

// handle handles one event. It runs on the informer's goroutine, which
// re-panics whatever escapes and so ends the process: the handlers and
// filters are contained one by one, and what is left of the operator's
// code on the way (a typed object's DeepCopy or MarshalJSON) is contained
// here, the event then lost as one that cannot be handled.
func (l *Handler) handle(raw any, eventType string) {
	if p := contain.Call(func() { l.handleEvent(raw, eventType) }); p != nil {
		l.log.Error(p, "An event cannot be handled: the object's own code panicked.", "stack", string(p.Stack))
		metrics.CallbackPanicked(l.k.Label, metrics.CallbackEncoding, "")
	}
}

func (l *Handler) handleEvent(raw any, eventType string) {
	cached, ok := raw.(client.Object)
	if !ok {
		return
	}
	if l.k.Accept != nil && !l.k.Accept(cached) {
		return
	}
	obj := cached.DeepCopyObject().(client.Object) // the informer's copy is shared
	body, err := l.k.Objects.Body(obj)
	if err != nil {
		l.log.Error(err, "An event cannot be handled.")
		return
	}
	key := types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}
	log := l.log.WithValues("namespace", key.Namespace, "name", key.Name)
	var mem *memory.Object
	switch eventType {
	case causes.EventListed, causes.EventAdded:
		l.k.Memories.Notice(obj.GetUID(), key, l.k.Own.FoundAtStart(eventType == causes.EventListed))
		mem = l.k.Memories.Recall(obj.GetUID(), key)
	default:
		mem = l.k.Memories.Known(obj.GetUID())
	}
	subject := &registry.Subject{Obj: obj,
		Cause:          &causes.Cause{Body: body, Patch: patch.New(), Memo: mem.Memo(), Indices: l.k.Indices},
		FilterPanicked: cycle.FilterPanicked(l.k.Label, log)}
	objectKey := key.Namespace + "/" + key.Name + "/" + string(obj.GetUID())
	for _, h := range l.k.Registered.Indexing {
		l.index(log, h, subject, objectKey, eventType == causes.EventDeleted)
	}
	// An object handed over to another replica leaves this one's cache
	// with a DELETED event, but it was not deleted: its index entries go,
	// as it is no longer in this replica's share, and nothing else happens.
	if eventType == causes.EventDeleted && l.k.HandedOver(obj.GetUID()) {
		return
	}
	for _, h := range l.k.Registered.MatchEvents(subject) {
		l.event(log, h, subject, eventType)
	}
	// A kind without a controller has no reconcile to forget its objects:
	// their DELETED event does.
	if eventType == causes.EventDeleted && !l.k.Reconciles {
		l.k.Memories.ForgetUID(obj.GetUID())
	}
}

// index updates one index with the object: its result replaces the
// object's values; a deleted or no longer matching object's values go.
func (l *Handler) index(log logr.Logger, h *registry.IndexHandler, s *registry.Subject, objectKey string, deleted bool) {
	ix := l.k.Indices.Ensure(h.ID)
	failureKey := h.ID + "\x00" + objectKey
	if deleted {
		ix.Remove(objectKey)
		l.setFailure(failureKey, nil)
		return
	}
	if !h.Matches(s) {
		ix.Remove(objectKey)
		return
	}
	now := l.k.Clock.Now()
	state := &execution.HandlerState{Active: true, Started: now}
	if f, failed := l.failure(failureKey); failed {
		if f.until.IsZero() || now.Before(f.until) {
			return // excluded: for good, or until its delay is over
		}
		state = f.state
	}
	c := *s.Cause
	c.HandlerID, c.Param = h.ID, h.Param
	hctx := l.k.Context(l.ctx, posting.Local(log))
	outcome := execution.Execute(hctx, &h.Handler, state, now, execution.Defaults{Errors: execution.ErrorsIgnored, Backoff: l.k.Backoff},
		func(ctx context.Context) (any, error) { return h.Fn(ctx, s.Obj, &c) })
	countPanic(l.k.Label, metrics.CallbackIndex, h.ID, outcome)
	switch {
	case outcome.Cancelled:
		return
	case outcome.Err == nil:
		l.setFailure(failureKey, nil)
		if entries, ok := indexing.Entries(outcome.Result); ok {
			ix.Replace(objectKey, entries)
		}
	default:
		// A failed object is out of the index: for good after a permanent
		// failure, until its delay after a temporary one.
		ix.Remove(objectKey)
		next := state.WithOutcome(outcome, now)
		f := indexFailure{state: next}
		if !next.Finished() && next.Delayed != nil {
			f.until = *next.Delayed
		}
		l.setFailure(failureKey, &f)
	}
}

func (l *Handler) failure(key string) (indexFailure, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f, ok := l.failures[key]
	return f, ok
}

func (l *Handler) setFailure(key string, f *indexFailure) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if f == nil {
		delete(l.failures, key)
		return
	}
	if l.failures == nil {
		l.failures = map[string]indexFailure{}
	}
	l.failures[key] = *f
}

// event calls one on-event handler; its errors are logged and ignored, its
// result and patch are written to the object.
func (l *Handler) event(log logr.Logger, h *registry.EventHandler, s *registry.Subject, eventType string) {
	now := l.k.Clock.Now()
	e := &causes.Event{Type: eventType, HandlerID: h.ID, Param: h.Param, Body: s.Cause.Body, Patch: patch.New(),
		Memo: s.Cause.Memo, Indices: s.Cause.Indices}
	hctx := l.k.Context(l.ctx, posting.Local(log))
	outcome := execution.Execute(hctx, &h.Handler, &execution.HandlerState{Active: true, Started: now}, now,
		execution.Defaults{Errors: execution.ErrorsIgnored, Backoff: l.k.Backoff},
		func(ctx context.Context) (any, error) { return execution.PlainResult(h.Fn(ctx, s.Obj, e)) })
	countPanic(l.k.Label, metrics.CallbackEvent, h.ID, outcome)
	if outcome.Err == nil && outcome.Result != nil {
		if err := mergepatch.SetResult(e.Patch, h.ID, outcome.Result); err != nil {
			log.Error(err, fmt.Sprintf("The result of %s cannot be stored.", h.Handler))
		}
	}
	if e.Patch.IsEmpty() || eventType == causes.EventDeleted {
		return
	}
	ref := daemons.Ref{UID: s.Obj.GetUID(), Namespace: s.Obj.GetNamespace(), Name: s.Obj.GetName()}
	if err := l.k.Apply(l.ctx, ref, e.Patch); err != nil {
		log.Error(err, fmt.Sprintf("The changes of %s could not be written.", h.Handler))
	}
}

// New handles the raw events of the kind until ctx ends.
func New(ctx context.Context, k Kind, log logr.Logger) *Handler {
	return &Handler{k: k, ctx: ctx, log: log}
}

// countPanic counts the attempt's panic, if it panicked.
func countPanic(kind, callback, handler string, o execution.Outcome) {
	if o.Panic != nil {
		metrics.CallbackPanicked(kind, callback, handler)
	}
}
