// Package ownership is the one seam between the engine and the sharing
// of its objects with other replicas (docs/sharding.md): which objects its
// cache holds, whether it may work on one now, how it lets go of one, how
// its writes are bounded, and what runs beside the engine. An operator
// that is not sharded owns every object (Unshared); a ring member owns its
// share (internal/ring's Share).
package ownership

import (
	"context"
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/kopf-go/kopf/internal/freeze"
)

// Standby is the key of Adopting's map under which stand the selections
// that a ring member watches before anyone dies, by bucket and whatever
// their owner, so that a takeover lists nothing: no retired member's name
// is empty.
const Standby = ""

// Ownership says what a replica may do with the objects of its kinds.
type Ownership interface {
	// Ready is closed once the engine may build its cache: a ring member
	// has joined, and knows its name.
	Ready() <-chan struct{}
	// Lost is closed if the replica loses all of its objects at once (a
	// ring member's fence): the engine then cancels its handlers and
	// daemons without a graceful stop. Nil: never.
	Lost() <-chan struct{}
	// CacheSelector selects the objects of the run's cache; nil: all.
	CacheSelector() labels.Selector
	// Claim tells what the replica may do with an object as its cache
	// shows it at now.
	Claim(obj client.Object, now time.Time) Claim
	// LetGo is the write that hands obj over to next, and settle, to be
	// called after that write, whether it was written.
	LetGo(obj client.Object, next string) (ack map[string]any, settle func(written bool))
	// PutBack is the write that puts back an owner label edited by hand
	// (a Claim with PutBack), so that the object leaves this replica's
	// cache for the replica it is granted to.
	PutBack(obj client.Object) map[string]any
	// FoundAtStart says whether an object that entered the cache (in the
	// initial listing, or not) counts as found at start, so that resume
	// handlers run for it; Entered is told of it, once per entry.
	FoundAtStart(initial bool) bool
	Entered(obj client.Object)
	// ReconcilesEveryKind: every kind needs a controller, even one with
	// low-level handlers only (handing objects over takes a reconcile).
	ReconcilesEveryKind() bool
	// KeepsNames: every object that change handlers or daemons work on
	// carries the operator's finalizer, so that no object takes its name
	// while a replica still works on it. A ring member's objects move
	// between replicas, and an object created anew under a name may be
	// placed on another replica than its predecessor's.
	KeepsNames() bool
	// Bound wraps the engine's clients: a ring member's writes to objects
	// end with its tenure.
	Bound(c client.Client) client.Client
	// Fence tells, from an object's metadata, whether the replica may
	// still write to it; the engine's writer guards every write so that
	// the API server refuses it if the object changed since that check
	// (internal/write, fence.go). Nil: every object is the replica's, and
	// writes go unguarded by versions.
	Fence() func(obj metav1.Object) error
	// Adopting selects, for each retired ring member whose objects the
	// replica adopts, those objects, and under Standby the objects that
	// it would adopt if their owner died now: the engine watches each
	// selection with a cache of its own beside its share's, until it is
	// gone from the map, and works on the objects of any of them that
	// Adopts names. The channel is closed when that may have changed; a
	// nil one: the replica never adopts. The same channel, asked again,
	// says that what Adopts answers has not changed since (the selections
	// may have: the standby caches wait out a pause), so that no object
	// became the replica's but by an event of its cache.
	Adopting() (map[string][]labels.Selector, <-chan struct{})
	// Adopts reports whether an object of an adoption cache is the
	// replica's to work on now.
	Adopts(obj client.Object) bool
	// ChangedSinceRetirement reports whether an object was written after
	// this replica first saw its owner retired: an object in an adoption
	// cache's first listing then waits out the ring's margin, as one that
	// enters later does, since the write may be a late one of a retired
	// member that moved it from another adopter, which stops within the
	// margin.
	ChangedSinceRetirement(obj client.Object) bool
	// ClaimsFirst reports whether an adopted object is claimed before any
	// work on it (a retirement while the ring had no live member, with
	// another ring about): its cycle stands by and writes the claim, and
	// the low-level handlers hear of it only once the claim has landed
	// and the object entered the share's cache, since the other ring's
	// write may land instead.
	ClaimsFirst(obj client.Object) bool
	// OwnerOf is the ring member that an object's owner label names (""
	// for none). The adoption caches index their objects by it, so that a
	// change of the epoch looks only through the objects of the retired
	// members that the replica adopts from, not through every object it
	// stands by for.
	OwnerOf(obj metav1.Object) string
	// Rebucket is the write that puts right an object of an adoption
	// cache whose bucket label keeps it from its adopter's selection; nil
	// for an object that needs none.
	Rebucket(obj metav1.Object) map[string]any
	// PutRight is the write that puts back the owner label of an object
	// of an adoption cache whose label names a retired member that the
	// replica adopts it from while its grant names another member (a
	// hand edit that its target could not put back); nil for an object
	// that needs none.
	PutRight(obj client.Object) map[string]any
	// ClaimAdopted is the write that makes an adopted object the
	// replica's in the API server, sent before the replica's first write
	// to it; nil for an object that needs none. Nil: the replica never
	// adopts.
	ClaimAdopted() func(obj metav1.Object) map[string]any
	// Runnables are the manager's runnables of the engine, given what the
	// engine runs (Engine).
	Runnables(e Engine) ([]manager.Runnable, error)
	// Watch runs beside each run of the engine's controllers, until ctx
	// ends: a ring member's summaries and metrics of its share. shares
	// counts the objects the engine remembers, by the kinds' metrics
	// labels; recheck has the engine reconcile those of its objects that
	// stray tells (a ring's members changed, and they may have to be
	// handed over).
	Watch(ctx context.Context, shares func() map[string]int, recheck func(stray func(namespace, name string) bool)) error
}

// Engine is what the ownership gets to know of the engine when it makes
// the manager's runnables: its parts, not the engine itself.
type Engine struct {
	// Kinds are the GVKs of the engine's kinds, known at setup; Unknown
	// names a kind selected while running (nil: none).
	Kinds   []schema.GroupVersionKind
	Unknown []string
	// Finalized are the kinds of Kinds that change handlers or daemons
	// work on: where the ownership keeps names (KeepsNames), their
	// objects carry the operator's finalizer.
	Finalized []schema.GroupVersionKind
	// Config, HTTPClient and Mapper are the manager's.
	Config     *rest.Config
	HTTPClient *http.Client
	Mapper     meta.RESTMapper
	// Toggle is the operator's frozen state.
	Toggle *freeze.Toggle
	// Idle reports whether nothing of the engine runs any more: no
	// daemon, timer or handler.
	Idle func() bool
	// Runnables are the engine's runnables, in the order they are added
	// to the manager; Working are those of them that work on objects (the
	// engine and the daemons' supervisor).
	Runnables, Working []manager.Runnable
}

// ClaimKind is what a replica may do with an object now.
type ClaimKind int

const (
	// Work: handle the object.
	Work ClaimKind = iota
	// HandOver: let go of it to the next member.
	HandOver
	// StandBy: run nothing for it, and stop its daemons: it is in the
	// cache but not this replica's to work on (an owner label edited by
	// hand, or a membership lost).
	StandBy
)

// Claim is the ownership's verdict on one object.
type Claim struct {
	Kind ClaimKind
	// Next is the member to hand the object over to.
	Next string
	// Why says why the replica stands by; PutBack: and it puts the
	// object's owner label back (Ownership.PutBack).
	Why     string
	PutBack bool
}

// Unshared is the ownership of an operator that is not sharded: every
// object of its kinds (in its namespaces) is its own.
type Unshared struct{}

// alwaysReady is closed from the start.
var alwaysReady = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

func (Unshared) Ready() <-chan struct{}               { return alwaysReady }
func (Unshared) Lost() <-chan struct{}                { return nil }
func (Unshared) CacheSelector() labels.Selector       { return nil }
func (Unshared) Claim(client.Object, time.Time) Claim { return Claim{} }
func (Unshared) FoundAtStart(initial bool) bool       { return initial }
func (Unshared) Entered(client.Object)                {}
func (Unshared) ReconcilesEveryKind() bool            { return false }
func (Unshared) KeepsNames() bool                     { return false }
func (Unshared) Bound(c client.Client) client.Client  { return c }
func (Unshared) Fence() func(metav1.Object) error     { return nil }
func (Unshared) Watch(context.Context, func() map[string]int, func(func(string, string) bool)) error {
	return nil
}
func (Unshared) PutBack(client.Object) map[string]any { return nil } // never claimed for one

func (Unshared) Adopting() (map[string][]labels.Selector, <-chan struct{}) { return nil, nil }
func (Unshared) Adopts(client.Object) bool                                 { return false }
func (Unshared) ClaimsFirst(client.Object) bool                            { return false }
func (Unshared) ChangedSinceRetirement(client.Object) bool                 { return false }
func (Unshared) OwnerOf(metav1.Object) string                              { return "" }
func (Unshared) Rebucket(metav1.Object) map[string]any                     { return nil }
func (Unshared) PutRight(client.Object) map[string]any                     { return nil }
func (Unshared) ClaimAdopted() func(metav1.Object) map[string]any          { return nil }

func (Unshared) LetGo(client.Object, string) (map[string]any, func(bool)) {
	return nil, func(bool) {} // never claimed for a handover
}

func (Unshared) Runnables(e Engine) ([]manager.Runnable, error) {
	return e.Runnables, nil
}
