// Package share is a ring member's ownership of its objects (the engine's
// ownership seam, docs/sharding.md): its cache's selector, its claims, the
// handover's acknowledgement, the bound of its writes by its tenure, and
// the runnables that hold its Lease and run the assigner.
package share

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/kopf-go/kopf/internal/metrics"
	"github.com/kopf-go/kopf/internal/ownership"
	"github.com/kopf-go/kopf/internal/ring"
	"github.com/kopf-go/kopf/internal/scopes"
	"github.com/kopf-go/kopf/internal/sharding"
)

// Ownership is the ownership of a ring member (docs/sharding.md): its
// cache selects the objects whose owner label names it, it works on those
// that are also granted to it while its tenure holds, it hands them over
// when the assigner asks, and its writes end with its tenure.
type Ownership struct {
	name   string // the ring's name, for logs and metrics
	keys   ring.Keys
	member *ring.Member
	// assigner is made with the runnables, once the engine's kinds are
	// known.
	assigner ring.AssignerSettings
	clock    clock.WithTicker
	log      logr.Logger
	// taken and released count the objects that entered and left this
	// member's cache since the last summary line.
	taken, released atomic.Int64
	// epoch is the ring's members as the assigner last published them.
	epoch epoch
	// adopting is what this member's adoption caches select.
	adopting adopting
	// noStandby: see Sharding.NoStandby.
	noStandby bool
	// leases reads the Leases of the ring's namespace: another ring's tell
	// whether an orphaned retirement's objects are claimed first.
	leases client.Reader
	// finalizer is the operator's, which placement at admission adds.
	finalizer string
}

var _ ownership.Ownership = (*Ownership)(nil)

// New prepares the membership of the replica (identity) in its ring;
// c writes the member's Lease, without the bound of its writes to objects
// (the Lease is what extends them).
//
// The assigner gets fixed namespaces as such, and those of patterns with
// globs (following) as the set that follows them.
func New(c client.Client, sh Sharding, identity string, clk clock.WithTicker, log logr.Logger, served *scopes.Served, following bool) (*Ownership, error) {
	namespaces, _ := served.Now()
	if !following {
		served = nil
	}
	log = log.WithName("ring")
	member, err := ring.NewMember(c, ring.Settings{Ring: sh.Ring, Namespace: sh.Namespace, Identity: identity,
		Durations: sh.Durations, Clock: clk, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("join the ring %q: %w", sh.Ring, err)
	}
	own := &Ownership{name: sh.Ring, keys: ring.KeysOf(sh.Namespace, sh.Ring), member: member, clock: clk, log: log, noStandby: sh.NoStandby, leases: c, finalizer: sh.Finalizer,
		assigner: ring.AssignerSettings{Ring: sh.Ring, Namespace: sh.Namespace, Identity: identity,
			Durations: sh.Durations,
			Workers:   sh.AssignerWorkers, Namespaces: namespaces, Served: served, Logger: log.WithName("assigner"),
			OnMembers: func(live []string) { metrics.ShardMembersLive(sh.Ring, len(live)) }}}
	if sh.Placer != nil {
		sh.Placer.set(own)
	}
	return own, nil
}

// epoch holds the epoch that the ring's assigner published, and wakes
// the engine's watch when it changes.
type epoch struct {
	mu      sync.Mutex
	e       sharding.Epoch
	changed chan struct{} // closed and replaced at every change
	// retiredAt is, for each retired member, the version of the first
	// epoch that this replica saw retire it (none if it was read from no
	// Lease).
	retiredAt map[string]string
}

// set records a published epoch; true if it differs from the last.
func (e *epoch) set(next sharding.Epoch) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.changed == nil {
		e.changed = make(chan struct{})
	}
	e.noteRetired(next)
	if next.Same(e.e) {
		return false
	}
	e.e = next
	close(e.changed)
	e.changed = make(chan struct{})
	return true
}

// noteRetired records when each member was first seen retired, and
// forgets those no longer retired (the caller holds mu).
func (e *epoch) noteRetired(next sharding.Epoch) {
	for name := range e.retiredAt {
		if !next.IsRetired(name) {
			delete(e.retiredAt, name)
		}
	}
	if next.Version == "" {
		return
	}
	for name := range next.Retired {
		if _, seen := e.retiredAt[name]; !seen {
			if e.retiredAt == nil {
				e.retiredAt = map[string]string{}
			}
			e.retiredAt[name] = next.Version
		}
	}
}

// retiredSince is the version since which a write to the member's
// objects may be a late one of its own: the version the assigner
// recorded a margin before the retirement, or else that of the first
// epoch seen to retire the member; false if neither (not retired, or not
// from a Lease). The record does not depend on when this replica first
// saw the epoch, which a relisted watch of the Leases may show late, and
// it covers a late write that landed within the margin before.
func (e *epoch) retiredSince(member string) (string, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if v := e.e.WrittenBefore[member]; v != "" && e.e.IsRetired(member) {
		return v, true
	}
	v, ok := e.retiredAt[member]
	return v, ok
}

// now is the published epoch, and a channel closed when it changes.
func (e *epoch) now() (sharding.Epoch, <-chan struct{}) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.changed == nil {
		e.changed = make(chan struct{})
	}
	return e.e, e.changed
}

func (r *Ownership) Ready() <-chan struct{} { return r.member.Joined() }
func (r *Ownership) Lost() <-chan struct{}  { return r.member.Fenced() }

// CacheSelector selects the objects whose owner label names this member:
// its cache holds its share, and an object whose label moves to another
// member leaves it.
func (r *Ownership) CacheSelector() labels.Selector {
	return labels.SelectorFromSet(labels.Set{r.keys.Owner: r.member.Name()})
}

// Claim works on an object only while the member's tenure holds (checked
// by the clock, so that a process resumed after a long pause stands by
// even before its fence's timer has run) and both the owner label and
// the grant name it. An object that the ring's published members hash to
// another member is handed over to it (an adopted one once it is
// claimed), unless it is being deleted: its
// owner completes the deletion, so that its delete handlers run once,
// where its daemons stop for it. An object whose label names this member
// but whose grant does not (a label edited by hand) is stood by, and its
// label put back.
func (r *Ownership) Claim(obj client.Object, now time.Time) ownership.Claim {
	me := r.member.Name()
	select {
	case <-r.member.Fenced():
		return ownership.Claim{Kind: ownership.StandBy, Why: "this replica lost its ring membership"}
	default:
	}
	if !r.member.Tenure().Holds(now) {
		return ownership.Claim{Kind: ownership.StandBy, Why: "this replica's ring membership has run out"}
	}
	p := r.keys.PlacementOf(obj)
	e, _ := r.epoch.now()
	key := sharding.ObjectKey(obj.GetNamespace(), obj.GetName())
	switch {
	case e.IsRetired(me):
		return ownership.Claim{Kind: ownership.StandBy, Why: "the ring retired this member: it counts it dead, and the others adopt its objects"}
	case p.Handled(me):
	case p.Owner == me:
		return ownership.Claim{Kind: ownership.StandBy, PutBack: true, Why: fmt.Sprintf("its owner label names this member, but it is granted to %q; "+
			"the owner label was changed by someone else than the ring, and is put back", p.Granted)}
	case !e.IsRetired(p.Owner) || e.Adopter(key, p.Owner) != me:
		return ownership.Claim{Kind: ownership.StandBy, Why: fmt.Sprintf("its owner label names %q, which is not this member, nor a retired member whose objects this member adopts", p.Owner)}
	case p.Granted != p.Owner:
		return ownership.Claim{Kind: ownership.StandBy, PutBack: true, Why: fmt.Sprintf("its owner label names the retired member %q, but it is granted to %q; "+
			"the owner label was changed by someone else than the ring, and is put back", p.Owner, p.Granted)}
	}
	if p.Owner != me && r.claimFirst(e, p.Owner) {
		return ownership.Claim{Kind: ownership.StandBy, PutBack: true, Why: fmt.Sprintf("it is adopted from %q, retired when this ring had no live member, "+
			"and another ring is about, which may be taking this ring's objects: it is claimed before any work, so that the two cannot both work on it", p.Owner)}
	}
	if next, ok := sharding.Stray(key, me, e.Placing()); ok && obj.GetDeletionTimestamp() == nil {
		// An adopted object that hashes to a member that joined after
		// the retirement: its adopter works on it, claims it, and only
		// then hands it over. Letting go of it at once would stop its
		// work before any ran, and keep it stopped for as long as its
		// handover's write fails.
		if p.Owner != me {
			return ownership.Claim{}
		}
		return ownership.Claim{Kind: ownership.HandOver, Next: next}
	}
	return ownership.Claim{}
}

// adopted reports whether the object is one this member adopts: its
// owner label and grant name a retired member of the published epoch,
// and the object hashes to this member among that member's adopters.
func (r *Ownership) adopted(obj metav1.Object) bool {
	p := r.keys.PlacementOf(obj)
	if p.Owner == "" || p.Owner != p.Granted {
		return false
	}
	e, _ := r.epoch.now()
	return e.IsRetired(p.Owner) && e.Adopter(sharding.ObjectKey(obj.GetNamespace(), obj.GetName()), p.Owner) == r.member.Name()
}

// Adopts reports whether an object in one of the adoption caches is this
// member's to work on now: the epoch may have given it to another
// adopter, whose cache holds it too.
func (r *Ownership) Adopts(obj client.Object) bool { return r.adopted(obj) }

// ChangedSinceRetirement reports whether the object's version is newer
// than the version the assigner recorded a margin before the retirement
// of the member its owner label names, or else than the first epoch
// that this member saw retire it. A version that does not compare (not a
// decimal) counts as newer: the wait is the safe side.
func (r *Ownership) ChangedSinceRetirement(obj client.Object) bool {
	since, ok := r.epoch.retiredSince(r.OwnerOf(obj))
	if !ok {
		return false
	}
	cmp, err := resourceversion.CompareResourceVersion(obj.GetResourceVersion(), since)
	return err != nil || cmp > 0
}

// ClaimsFirst reports whether an object that this member adopts is
// claimed before any work on it (claimFirst), as Claim decides.
func (r *Ownership) ClaimsFirst(obj client.Object) bool {
	if !r.adopted(obj) {
		return false
	}
	e, _ := r.epoch.now()
	return r.claimFirst(e, r.OwnerOf(obj))
}

// OwnerOf is the member that the object's owner label names.
func (r *Ownership) OwnerOf(obj metav1.Object) string { return ring.Label(obj, r.keys.Owner) }

// ClaimAdopted is the write that makes an adopted object this member's
// in the API server: its owner label and grant moved to this member, and
// its bucket label set, guarded by the object's resourceVersion. The
// engine writes it before its first write of the object, and for the
// others at a slow pace, so that the retired member's name goes from
// every object; nil for an object that is not adopted.
func (r *Ownership) ClaimAdopted() func(obj metav1.Object) map[string]any {
	return func(obj metav1.Object) map[string]any {
		// An object being deleted is not claimed: its adopter completes
		// the deletion under the retired member's name, and the object
		// never moves between this member's caches, whose watches could
		// show it again, with its finalizer, after the deletion's last
		// write.
		if !r.adopted(obj) || obj.GetDeletionTimestamp() != nil {
			return nil
		}
		return r.claimBody(obj)
	}
}

// claimBody moves the object's owner label and grant to this member.
func (r *Ownership) claimBody(obj metav1.Object) map[string]any {
	me := r.member.Name()
	return map[string]any{"metadata": map[string]any{
		"resourceVersion": obj.GetResourceVersion(),
		"labels":          map[string]any{r.keys.Owner: me, r.keys.Bucket: ring.BucketLabel(obj.GetNamespace(), obj.GetName())},
		"annotations":     map[string]any{r.keys.Granted: me, r.keys.Next: nil},
	}}
}

// LetGo moves the owner label and the grant to the next member (sets the
// bucket label, and drops the handover request of an assigner before the
// ring's epoch), guarded by the resourceVersion of the object the member
// let go of, so that it overwrites no change it has not seen.
func (r *Ownership) LetGo(obj client.Object, next string) (map[string]any, func(bool)) {
	ack := map[string]any{"metadata": map[string]any{
		"resourceVersion": obj.GetResourceVersion(),
		"labels":          map[string]any{r.keys.Owner: next, r.keys.Bucket: ring.BucketLabel(obj.GetNamespace(), obj.GetName())},
		"annotations":     map[string]any{r.keys.Granted: next, r.keys.Next: nil},
	}}
	return ack, func(written bool) {
		if written {
			r.released.Add(1)
		}
	}
}

// PutBack is the write that puts a hand-edited owner label back to the
// member the object is granted to, or removes it if the object is granted
// to nobody: either way the object leaves this member's cache, and the
// assigner, which reads only the objects without a live owner, places it
// if its grant names nobody live. The label alone grants nothing, so this
// member may write it; the write is guarded by the resourceVersion.
func (r *Ownership) PutBack(obj client.Object) map[string]any {
	if r.adopted(obj) {
		// Stood by to be claimed first (claimFirst): the write is the claim.
		return r.claimBody(obj)
	}
	var owner any // nil removes the label
	if g := obj.GetAnnotations()[r.keys.Granted]; g != "" {
		owner = g
	}
	return map[string]any{"metadata": map[string]any{
		"resourceVersion": obj.GetResourceVersion(),
		"labels":          map[string]any{r.keys.Owner: owner},
	}}
}

// Fence lets the engine write to an object only while its owner label and
// its grant name this member; the writer has the API server check that
// nothing changed since (docs/sharding.md, "Writes fenced by the API
// server").
func (r *Ownership) Fence() func(obj metav1.Object) error {
	return func(obj metav1.Object) error {
		p := r.keys.PlacementOf(obj)
		e, _ := r.epoch.now()
		if me := r.member.Name(); e.IsRetired(me) || !p.Handled(me) && !r.adopted(obj) {
			return fmt.Errorf("its owner label names %q and its grant %q, not this member %q nor a retired member whose objects it adopts", p.Owner, p.Granted, me)
		}
		return nil
	}
}

// FoundAtStart is true for every object that enters the member's cache:
// it may come from another member, and this one has none of that
// member's memory of it, just as after a restart (docs/sharding.md).
func (r *Ownership) FoundAtStart(bool) bool { return true }

// Entered counts the object for the next summary.
func (r *Ownership) Entered(obj client.Object) {
	r.taken.Add(1)
	// Read the object only for a line that is written: a takeover enters
	// tens of thousands at once.
	if log := r.log.V(1); log.Enabled() {
		log.Info("Took the object into this replica's shard.", "namespace", obj.GetNamespace(), "name", obj.GetName())
	}
}

// ReconcilesEveryKind: handing an object over takes a reconcile, also of
// a kind with low-level handlers only.
func (r *Ownership) ReconcilesEveryKind() bool { return true }
func (r *Ownership) KeepsNames() bool          { return true }

// Bound ends every write of the engine to objects with the member's
// tenure: none starts after another member could have taken its objects
// over, and each one's context ends then.
func (r *Ownership) Bound(c client.Client) client.Client {
	return &leaseBound{Client: c, until: func() time.Time { return r.member.Tenure().WritableUntil() }, clock: r.clock}
}

// Runnables make a ring member of the replica: the engine, its daemons,
// its Events and peering run on every replica, the member's Lease is held
// until the engine and the supervisor have stopped, and the assigner
// campaigns for its role while the operator is not frozen.
func (r *Ownership) Runnables(e ownership.Engine) ([]manager.Runnable, error) {
	if len(e.Unknown) > 0 {
		return nil, fmt.Errorf("shard ring %q: %s is selected while running, which sharding does not support yet; register it with For or ForKind", r.name, e.Unknown[0])
	}
	s := r.assigner
	s.Kinds, s.Finalizer, s.Finalized = e.Kinds, r.finalizer, e.Finalized
	s.Member = r.member.Name
	s.OnEpoch = func(e sharding.Epoch) {
		if r.epoch.set(e) {
			r.log.V(1).Info("The ring's epoch was published.", "epoch", e.Serial, "members", e.Members, "retired", e.RetiredNames())
		}
	}
	durations, err := s.Durations.Resolved()
	if err != nil {
		return nil, fmt.Errorf("shard ring %q: %w", r.name, err)
	}
	ahead := newCollectAhead(r.clock, durations.RenewPeriod, r.log)
	s.OnSilent = func(member string) {
		if member != r.member.Name() {
			ahead.silent(member)
		}
	}
	assigner, err := ring.NewAssigner(e.Config, e.HTTPClient, e.Mapper, s)
	if err != nil {
		return nil, fmt.Errorf("assign the objects of the ring %q: %w", r.name, err)
	}
	m := &membership{member: r.member, idle: e.Idle, log: r.log}
	out := []manager.Runnable{m, whileThawed{Runnable: assigner, toggle: e.Toggle}}
	for _, run := range e.Runnables {
		if slices.Contains(e.Working, run) {
			f := newFinishing(run)
			m.after = append(m.after, f)
			out = append(out, f)
		} else {
			out = append(out, everyReplica{run})
		}
	}
	return out, nil
}

// Watch logs, every few seconds while objects move, how many entered and
// left this member's cache, and keeps the metric of its share. Whenever
// the ring's published members change, it has the engine look again at
// every object of its share that now hashes to another member: a join
// moves only those, each handed over by this member in one write.
func (r *Ownership) Watch(ctx context.Context, shares func() map[string]int, recheck func(stray func(namespace, name string) bool)) error {
	ticker := r.clock.NewTicker(shardSummaryInterval)
	defer ticker.Stop()
	// The first listing brings every object to a reconcile anyway.
	_, changed := r.epoch.now()
	for {
		select {
		case <-ctx.Done():
			r.summarize()
			return nil
		case <-changed:
			var e sharding.Epoch
			e, changed = r.epoch.now()
			recheck(r.strays(e.Placing()))
		case <-ticker.C():
			r.summarize()
			for kind, n := range shares() {
				metrics.ShardObjectsOf(r.name, kind).Set(float64(n))
			}
		}
	}
}

// strays tells which objects the members hash to another member than this
// one.
func (r *Ownership) strays(members []string) func(namespace, name string) bool {
	me := r.member.Name()
	return func(namespace, name string) bool {
		_, ok := sharding.Stray(sharding.ObjectKey(namespace, name), me, members)
		return ok
	}
}

// summarize logs how many objects entered and left this member's cache
// since the last summary, if any did: one line per rebalance rather than
// one per object (those are debug lines).
func (r *Ownership) summarize() {
	taken, released := r.taken.Swap(0), r.released.Swap(0)
	if taken == 0 && released == 0 {
		return
	}
	r.log.Info("The shard of this replica changed.", "ring", r.name, "member", r.member.Name(), "taken", taken, "released", released)
}

// shardSummaryInterval is how often the objects taken and released are
// summed up in one log line: a rebalance moves them within seconds.
const shardSummaryInterval = 5 * time.Second
