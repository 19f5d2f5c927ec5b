package reactor

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// ownership is the one seam between the engine and the sharing of its
// objects with other replicas (docs/sharding.md): which objects its cache
// holds, whether it may work on one now, how it lets go of one, how its
// writes are bounded, and what runs beside the engine. An operator that
// is not sharded owns every object (unshared); a ring member owns its
// share (ringShare).
type ownership interface {
	// ready is closed once the engine may build its cache: a ring member
	// has joined, and knows its name.
	ready() <-chan struct{}
	// lost is closed if the replica loses all of its objects at once (a
	// ring member's fence): the engine then cancels its handlers and
	// daemons without a graceful stop. Nil: never.
	lost() <-chan struct{}
	// cacheSelector selects the objects of the run's cache; nil: all.
	cacheSelector() labels.Selector
	// claim tells what the replica may do with an object as its cache
	// shows it at now.
	claim(obj client.Object, now time.Time) claim
	// letGo is the write that hands obj over to next, and settle, to be
	// called after that write, whether it was written.
	letGo(obj client.Object, next string) (ack map[string]any, settle func(written bool))
	// foundAtStart says whether an object that entered the cache (in the
	// initial listing, or not) counts as found at start, so that resume
	// handlers run for it; entered is told of it, once per entry.
	foundAtStart(initial bool) bool
	entered(obj client.Object)
	// reconcilesEveryKind: every kind needs a controller, even one with
	// low-level handlers only (handing objects over takes a reconcile).
	reconcilesEveryKind() bool
	// bound wraps the engine's clients: a ring member's writes to objects
	// end with its tenure.
	bound(c client.Client) client.Client
	// runnables are the manager's runnables of the engine, given the
	// engine's own: the engine, the supervisor, and the rest.
	runnables(eng *engine, rest []manager.Runnable) ([]manager.Runnable, error)
	// watch runs beside each run of the engine's controllers, until ctx
	// ends: a ring member's summaries and metrics of its share.
	watch(ctx context.Context, e *engine) error
}

// claimKind is what a replica may do with an object now.
type claimKind int

const (
	// work: handle the object.
	work claimKind = iota
	// handOver: let go of it to the next member.
	handOver
	// standBy: run nothing for it, and stop its daemons: it is in the
	// cache but not this replica's to work on (an owner label edited by
	// hand, or a membership lost).
	standBy
)

// claim is the ownership's verdict on one object.
type claim struct {
	kind claimKind
	// next is the member to hand the object over to.
	next string
	// why says why the replica stands by.
	why string
}

// unshared is the ownership of an operator that is not sharded: every
// object of its kinds (in its namespaces) is its own.
type unshared struct{}

// alwaysReady is closed from the start.
var alwaysReady = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

func (unshared) ready() <-chan struct{}               { return alwaysReady }
func (unshared) lost() <-chan struct{}                { return nil }
func (unshared) cacheSelector() labels.Selector       { return nil }
func (unshared) claim(client.Object, time.Time) claim { return claim{} }
func (unshared) foundAtStart(initial bool) bool       { return initial }
func (unshared) entered(client.Object)                {}
func (unshared) reconcilesEveryKind() bool            { return false }
func (unshared) bound(c client.Client) client.Client  { return c }
func (unshared) watch(context.Context, *engine) error { return nil }

func (unshared) letGo(client.Object, string) (map[string]any, func(bool)) {
	return nil, func(bool) {} // never claimed for a handover
}

func (unshared) runnables(_ *engine, rest []manager.Runnable) ([]manager.Runnable, error) {
	return rest, nil
}
