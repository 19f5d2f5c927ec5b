package posting

import (
	"context"
	"errors"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
)

// queued is one Event waiting for the background loop; it keeps the
// reference, so it is posted even if the object is gone by then.
type queued struct {
	ref                     Ref
	eventType, reason, text string
	// name is the Event's name, chosen before its first call: a call that
	// the stop cut short may have been made, and its second try must not
	// post the Event twice. again: this is that second try.
	name  string
	again bool
}

// Event queues an Event of the type about each of objs (an object, a list,
// or Objects), if Settings allow the type; the explicit API of handlers
// (kopf.event and its kin) ends here. It never waits for the API server.
// The error names the objects that could not be referred to.
func (p *Poster) Event(objs runtime.Object, eventType, reason, message string) error {
	if !p.Allows(eventType) {
		return nil
	}
	refs, err := p.Refs(objs)
	for _, ref := range refs {
		p.Enqueue(ref, eventType, reason, message)
	}
	return err
}

// Enqueue puts an Event into the queue without any gates and without
// waiting. When the queue is full, or the background loop has finished,
// the Event is dropped and the drop is logged: Events are helpful but
// auxiliary, and handlers must not stall on them. It tells whether the
// Event was queued.
func (p *Poster) Enqueue(ref Ref, eventType, reason, message string) bool {
	if aboutEvent(ref) {
		return false
	}
	p.init()
	select {
	case <-p.stopped:
		p.Log.V(1).Info("Dropping an event: the poster has stopped.", "type", eventType, "reason", reason,
			"kind", ref.GVK.Kind, "namespace", ref.Namespace, "name", ref.Name)
		return false
	default:
	}
	select {
	case p.queue <- queued{ref: ref, eventType: eventType, reason: reason, text: message}:
		return true
	default:
		p.Log.Info("Dropping an event: the queue of events is full (is the poster running?).",
			"type", eventType, "reason", reason, "kind", ref.GVK.Kind, "namespace", ref.Namespace, "name", ref.Name)
		return false
	}
}

// Start posts queued Events one by one until ctx ends, then keeps posting
// what is queued, for DrainTimeout at most, and returns. A call to the API
// server that the stop cuts short is tried again in the drain, under the
// same name, so that it is not posted twice if the API server had taken
// it. A Poster starts once. It is a manager.Runnable; it starts no
// goroutines.
func (p *Poster) Start(ctx context.Context) error {
	p.init()
	if !p.started.CompareAndSwap(false, true) {
		return errors.New("start the poster of events: it is already started")
	}
	defer close(p.stopped)
	for {
		select {
		case ev := <-p.queue:
			ev.name = p.newName()
			if err := p.postOne(ctx, ev); err != nil {
				if ctx.Err() != nil {
					ev.again = true
					return p.drain(ctx, &ev)
				}
				p.failed(err, ev)
			}
		case <-ctx.Done():
			return p.drain(ctx, nil)
		}
	}
}

// drain posts first (if any) and what is still queued, until the queue is
// empty or the drain time is over; the rest is dropped and counted.
func (p *Poster) drain(stopped context.Context, first *queued) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(stopped), durationOr(p.DrainTimeout, DefaultDrainTimeout))
	defer cancel()
	post := func(ev queued) {
		if err := p.postOne(ctx, ev); err != nil {
			p.failed(err, ev)
		}
	}
	if first != nil {
		post(*first)
	}
	dropped := 0
	for {
		select {
		case ev := <-p.queue:
			if ctx.Err() != nil {
				dropped++
				continue
			}
			ev.name = p.newName()
			post(ev)
		default:
			if dropped > 0 {
				p.Log.Info("Dropped the events still queued when the operator stopped.", "count", dropped)
			}
			return nil
		}
	}
}

// postOne posts one Event under its name, for PostTimeout at most. That
// the name exists already means, on a second try, that the first (cut
// short) was made after all; on a first try, that another Event has the
// name by chance, and the Event is posted under a new one.
func (p *Poster) postOne(ctx context.Context, ev queued) error {
	if aboutEvent(ev.ref) {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, durationOr(p.PostTimeout, DefaultPostTimeout))
	defer cancel()
	err := p.create(ctx, ev.ref, ev.eventType, ev.reason, ev.text, ev.name)
	if apierrors.IsAlreadyExists(err) {
		if ev.again {
			return nil
		}
		err = p.create(ctx, ev.ref, ev.eventType, ev.reason, ev.text, p.newName())
	}
	return err
}

// failed logs (and so ignores) a failed Event, as Kopf does: Events are
// helpful but auxiliary, and must not fail the operator.
func (p *Poster) failed(err error, ev queued) {
	p.Log.Error(err, "Failed to post an event. Ignoring and continuing.",
		"type", ev.eventType, "reason", ev.reason, "message", Shorten(ev.text))
}

// NeedLeaderElection is true, as for the engine and its daemon supervisor:
// the manager stops runnables without leader election first, and the
// poster must stop with the handlers, not before them. Events queued
// before this replica leads wait in the queue.
func (p *Poster) NeedLeaderElection() bool { return true }

func (p *Poster) init() {
	p.setup.Do(func() {
		size := p.QueueSize
		if size <= 0 {
			size = DefaultQueueSize
		}
		p.queue = make(chan queued, size)
		p.stopped = make(chan struct{})
	})
}

func durationOr(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}
