package ring

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/clock"

	"github.com/kopf-go/kopf/pkg/keys"
)

// Other rings on one object (docs/sharding.md, "Renaming a ring, or
// moving its Leases"). Rings are kept apart by their keys, so a ring
// renamed in a rolling update (or whose Leases moved to another
// namespace) would see every object of the old ring as unowned under its
// own keys, and place it while the old ring's members still handle it.
// So before it places an object, the assigner looks for other rings'
// keys on it; a ring that grants the object and has a member with a live
// Lease holds it, and it is not placed. Once that ring's members are
// gone, the placement removes that ring's keys, so that the object
// belongs to one ring only and the other ring, if it comes back (a
// rollback), refuses it the same way.

// foreignRing is one other ring's keys on an object: the ring, known by
// the namespace of its Leases and its name, and its owner label and grant
// there.
type foreignRing struct {
	namespace, ring string
	owner, granted  string
}

// id names the ring as ID does.
func (f foreignRing) id() string { return ID(f.namespace, f.ring) }

// keys are the ring's keys, which a placement removes.
func (f foreignRing) keys() Keys { return KeysOf(f.namespace, f.ring) }

// foreignRingsOf finds the keys of rings other than own in an object's
// labels and annotations: "<ns>.shard.kopf.dev/<ring>" labels and
// "...-granted" and "...-next" annotations, sorted by ring. Keys whose
// namespace or ring could not be a ring's (a key of some other use of the
// domain) are not rings. The rings of versions before the grant
// annotation ("shard.kopf.dev/<ring>", no namespace) are not looked at:
// they need a Recreate anyway (docs/sharding.md, "Deploying").
func foreignRingsOf(own Keys, labels, annotations map[string]string) []foreignRing {
	if len(labels) == 0 && len(annotations) == 0 {
		return nil
	}
	var found map[[2]string]*foreignRing // made at the first other ring: most objects have none
	ringOf := func(key string, suffixes ...string) *foreignRing {
		prefix, name, ok := strings.Cut(key, "/")
		if !ok {
			return nil
		}
		ns, ok := strings.CutSuffix(prefix, "."+keys.ShardPrefix)
		if !ok || len(validation.IsDNS1123Label(ns)) > 0 {
			return nil
		}
		if len(suffixes) > 0 {
			var cut bool
			for _, s := range suffixes {
				if name, cut = strings.CutSuffix(name, s); cut {
					break
				}
			}
			if !cut {
				return nil
			}
		}
		if ValidateRing(name) != nil || KeysOf(ns, name).Owner == own.Owner {
			return nil
		}
		id := [2]string{ns, name}
		if found == nil {
			found = map[[2]string]*foreignRing{}
		}
		if found[id] == nil {
			found[id] = &foreignRing{namespace: ns, ring: name}
		}
		return found[id]
	}
	for k, v := range labels {
		if f := ringOf(k); f != nil {
			f.owner = v
		}
	}
	for k, v := range annotations {
		if f := ringOf(k, "-granted"); f != nil {
			f.granted = v
		} else {
			ringOf(k, "-next") // found, for its keys to go with the others
		}
	}
	if len(found) == 0 {
		return nil
	}
	out := make([]foreignRing, 0, len(found))
	for _, f := range found {
		out = append(out, *f)
	}
	slices.SortFunc(out, func(a, b foreignRing) int { return strings.Compare(a.id(), b.id()) })
	return out
}

// holder is the member that may be working on the object in that ring,
// or may come to: its grant, which only that ring's assigner and the
// previous owner write. The label alone grants nothing; a grant whose
// label was moved away is put back by that ring if its member is live, so
// it holds the object all the same. "" if the grant names no member.
func (f foreignRing) holder() string {
	if f.granted == "" || len(validation.IsValidLabelValue(f.granted)) > 0 {
		return ""
	}
	return f.granted
}

// foreignLeaseAPI is what judging another ring's members needs of the
// Leases of a namespace.
type foreignLeaseAPI func(namespace string) leaseAPI

// foreignLeases judges whether other rings' members are live, by reading
// their Leases, and keeps what it read: a sweep of many objects of one
// member reads that member's Lease once every few seconds, not once per
// object.
//
// A member is judged as the ring's own observers judge theirs
// (docs/sharding.md, "How liveness is judged"): live until its Lease has
// stayed at one resourceVersion for the larger of this ring's lease
// duration and the Lease's own since this observer first saw that
// version, by this observer's clock; renewTime is not read, so clocks
// need not agree. A Lease found expired is then deleted on the condition
// that it is still that version, as the ring's assigner confirms its own
// members' deaths: a renewal since makes it fail, and an earlier run of
// that member's identity that restarts now finds no Lease to take over,
// so it never handles the objects this ring is about to take. A released
// Lease is a member that has stopped. A Lease that is gone is one only if
// it was not seen live within a lease duration, and not within a lease
// duration of this observer's start: one deleted by hand leaves a member
// that works until its next renewal.
type foreignLeases struct {
	leases foreignLeaseAPI
	clock  clock.PassiveClock
	// duration is this ring's lease duration, the least that any Lease
	// lasts; fresh is how long a read of a live Lease is reused.
	duration, fresh time.Duration
	// since is when this observer started.
	since time.Time

	mu      sync.Mutex
	members map[foreignMember]*foreignEntry
	// epochs are the other rings' epochs, by ID.
	epochs map[string]foreignEpoch
	// logged are the log lines said already: once per ring, not per
	// object.
	logged map[string]bool
}

// foreignMember is one member of another ring.
type foreignMember struct{ namespace, ring, member string }

// foreignEntry is what was read of one member's Lease.
type foreignEntry struct {
	mu sync.Mutex // held while its Lease is read: one read for many askers
	// version is the Lease's resourceVersion last seen live, first seen
	// at at, lasting lasts; "" if never seen live.
	version string
	at      time.Time
	lasts   time.Duration
	// read is when the Lease was last read, and present whether it was
	// there then.
	read    time.Time
	present bool
	// gone: the member is known to have stopped, for good (a member's
	// name is never used again once its Lease is released or deleted).
	gone bool
}

// newForeignLeases judges other rings' members by reading their Leases
// through leases.
func newForeignLeases(leases foreignLeaseAPI, clk clock.PassiveClock, d Durations) *foreignLeases {
	return &foreignLeases{leases: leases, clock: clk, duration: d.LeaseDuration, fresh: d.RenewPeriod,
		since: clk.Now(), members: map[foreignMember]*foreignEntry{}}
}

// liveUntil tells whether the member is live now, and if so until when
// at least (when to ask again). An error means that its Lease could not
// be read or its expiry not confirmed: the member may be live.
func (fl *foreignLeases) liveUntil(ctx context.Context, m foreignMember) (bool, time.Time, error) {
	fl.mu.Lock()
	e := fl.members[m]
	if e == nil {
		e = &foreignEntry{}
		fl.members[m] = e
	}
	fl.mu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	now := fl.clock.Now()
	if e.gone {
		return false, time.Time{}, nil
	}
	if !e.read.IsZero() && now.Before(e.read.Add(fl.fresh)) {
		// A read of a few seconds ago answers, unless the member's lease
		// has run out since: its expiry is confirmed by a read of now.
		if until, live := e.judge(now, fl.since, fl.duration); live || e.gone {
			return live, until, nil
		}
	}
	api := fl.leases(m.namespace)
	name := leaseName(m.ring, m.member)
	lease, err := api.Get(ctx, name, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return false, time.Time{}, fmt.Errorf("read the Lease %s/%s: %w", m.namespace, name, err)
	}
	e.observe(lease, err == nil, now, fl.duration)
	until, live := e.judge(now, fl.since, fl.duration)
	if live || e.gone {
		return live, until, nil
	}
	// Seen unchanged for its whole lease, and there still: confirmed by a
	// deletion on the condition that it is still that version.
	version := e.version
	err = api.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &version}})
	switch {
	case err == nil, apierrors.IsNotFound(err):
		e.gone = true
		return false, time.Time{}, nil
	case !apierrors.IsConflict(err):
		return false, time.Time{}, fmt.Errorf("delete the expired Lease %s/%s: %w", m.namespace, name, err)
	}
	// Renewed or released meanwhile: what it is now decides.
	lease, err = api.Get(ctx, name, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return false, time.Time{}, fmt.Errorf("read the Lease %s/%s: %w", m.namespace, name, err)
	}
	e.observe(lease, err == nil, now, fl.duration)
	until, live = e.judge(now, fl.since, fl.duration)
	return live || !e.gone, until, nil
}

// observe records a read of the member's Lease at now (found: it was
// there): a new version is a renewal seen now, a released Lease a member
// that stopped.
func (e *foreignEntry) observe(lease *coordinationv1.Lease, found bool, now time.Time, duration time.Duration) {
	e.read, e.present = now, found
	switch {
	case !found:
	case Released(lease):
		e.gone = true
	case lease.ResourceVersion != e.version:
		e.version, e.at, e.lasts = lease.ResourceVersion, now, max(duration, DeclaredDuration(lease))
	}
}

// judge tells whether the member counts as live at now, and until when,
// from what was read; neither live nor gone: its Lease is there and
// expired, and its expiry is to be confirmed. A Lease that is gone leaves
// its member live until its last version seen has expired, and one never
// seen live until a lease duration after this observer's start (since),
// as a new assigner doubts the members it has never seen.
func (e *foreignEntry) judge(now, since time.Time, duration time.Duration) (time.Time, bool) {
	if e.gone {
		return time.Time{}, false
	}
	end := e.at.Add(e.lasts)
	if e.version == "" {
		end = since.Add(duration)
	}
	if now.Before(end) && (e.version != "" || !e.present) {
		return end, true
	}
	if !e.present {
		e.gone = true
	}
	return time.Time{}, false
}

// once reports whether what key names is to be logged now: the first
// time since it was last reset.
func (fl *foreignLeases) once(key string) bool {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	if fl.logged == nil {
		fl.logged = map[string]bool{}
	}
	if fl.logged[key] {
		return false
	}
	fl.logged[key] = true
	return true
}

// reset has what key names logged again the next time.
func (fl *foreignLeases) reset(key string) {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	delete(fl.logged, key)
}

// heldByAnotherRing tells whether another ring may be working on the
// object, or may come to: it is granted there (a label alone grants
// nothing), and the granted member or any member of that ring's epoch
// has a live Lease, or one that could not be read. Any member, not only
// the granted one: a ring moves objects among its members in ways that
// another ring cannot follow (a live handover is a write to the object,
// which this ring would see, but the adoption of a departed member's
// objects by the others starts work before any write), so an object is
// free only once none of its ring's members can be working. Such an
// object is not placed (both rings would handle it) but looked at again
// when that member's lease would run out, since no event of the object
// may come before (the object does not change); after a failed read, a
// renew period later. The error says once per ring and kind, not per
// object, which ring holds the objects and what to do.
func (t *term) heldByAnotherRing(ctx context.Context, k key, s seen) bool {
	kind := t.a.s.Kinds[k.kind].Kind
	fl := t.a.foreign
	for _, f := range s.foreign {
		if f.holder() == "" {
			continue
		}
		member, live, until, err := fl.ringHolds(ctx, f)
		switch {
		case err != nil:
			if ctx.Err() == nil && fl.once("unread/"+f.id()) {
				t.a.s.Logger.Error(err, fmt.Sprintf("An object of %s is granted to a member of the ring %q in the namespace %s, whose Leases this replica cannot read: "+
					"the ring places none of that ring's objects until it can, since both rings would handle them. "+
					"It needs get and delete on leases (coordination.k8s.io) in the namespace %s; without them, stop that ring and remove its keys %s and %s from the objects "+
					"(docs/sharding.md, \"Renaming a ring, or moving its Leases\").",
					kind, f.ring, f.namespace, f.namespace, f.keys().Owner, f.keys().Granted),
					"otherRing", f.ring, "otherNamespace", f.namespace, "member", member, "object", k.String())
			}
			t.later(k, s, t.a.s.RenewPeriod)
			return true
		case live:
			fl.reset("unread/" + f.id())
			if fl.once("held/" + f.id() + "/" + kind) {
				t.a.s.Logger.Error(nil, fmt.Sprintf("Objects of %s are held by the ring %q in the namespace %s, whose members are live: this ring does not take them, since both rings would handle them. "+
					"If this ring replaces that one (a rolling update that renamed the ring or moved its Leases), finish the rollout: this ring takes the objects once that ring's members are gone. "+
					"If both rings are to run, they must not serve the same objects; to replace a ring at once, stop it first (a Deployment's Recreate strategy).",
					kind, f.ring, f.namespace),
					"otherRing", f.ring, "otherNamespace", f.namespace, "member", member, "object", k.String())
			}
			t.later(k, s, until.Sub(t.a.s.Clock.Now()))
			return true
		}
		fl.reset("unread/" + f.id())
	}
	for _, f := range s.foreign {
		if f.holder() != "" && fl.once("taken/"+f.id()+"/"+kind) {
			t.a.s.Logger.Info(fmt.Sprintf("Objects of %s held by the ring %q in the namespace %s are placed in this ring: that ring's members are gone, and its keys are removed from them.",
				kind, f.ring, f.namespace), "otherRing", f.ring, "otherNamespace", f.namespace, "object", k.String())
		}
	}
	return false
}

// ringHolds tells whether a member of the other ring may be working on
// its objects: the granted member, or a member its epoch lists, is live
// (which one, and until when at least). An error: a Lease could not be
// read, or an expiry not confirmed.
func (fl *foreignLeases) ringHolds(ctx context.Context, f foreignRing) (string, bool, time.Time, error) {
	members, err := fl.epochMembers(ctx, f.namespace, f.ring)
	if err != nil {
		return "", false, time.Time{}, err
	}
	candidates := append([]string{f.holder()}, members...)
	for i, m := range candidates {
		if slices.Contains(candidates[:i], m) {
			continue
		}
		live, until, err := fl.liveUntil(ctx, foreignMember{namespace: f.namespace, ring: f.ring, member: m})
		if err != nil || live {
			return m, live, until, err
		}
	}
	return "", false, time.Time{}, nil
}

// epochMembers are the members that the other ring's epoch Lease lists
// (none if it has none: a ring before the epoch, or one whose Lease was
// deleted), read once a renew period.
func (fl *foreignLeases) epochMembers(ctx context.Context, namespace, ring string) ([]string, error) {
	id := ID(namespace, ring)
	fl.mu.Lock()
	e, ok := fl.epochs[id]
	fl.mu.Unlock()
	now := fl.clock.Now()
	if ok && now.Before(e.read.Add(fl.fresh)) {
		return e.members, nil
	}
	name := EpochLease(ring)
	lease, err := fl.leases(namespace).Get(ctx, name, metav1.GetOptions{})
	var members []string
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return nil, fmt.Errorf("read the epoch Lease %s/%s: %w", namespace, name, err)
	default:
		members = epochMembersOf(lease)
	}
	fl.mu.Lock()
	if fl.epochs == nil {
		fl.epochs = map[string]foreignEpoch{}
	}
	fl.epochs[id] = foreignEpoch{members: members, read: now}
	fl.mu.Unlock()
	return members, nil
}

// epochMembersOf are the members an epoch Lease lists. It reads the
// annotation itself rather than through Published, whose epoch carries
// more than the members (and may change shape with it): only the members
// matter here.
func epochMembersOf(lease *coordinationv1.Lease) []string {
	var out []string
	for m := range strings.SplitSeq(lease.Annotations[MembersAnnotation], ",") {
		if m = strings.TrimSpace(m); m != "" {
			out = append(out, m)
		}
	}
	return out
}

// foreignEpoch is another ring's epoch as last read.
type foreignEpoch struct {
	members []string
	read    time.Time
}

// later looks at an object again after d (at least an election retry,
// so that a Lease judged on its edge is not asked about in a loop),
// unless a newer sighting of it comes first.
func (t *term) later(k key, s seen, d time.Duration) {
	t.putBack(k, s)
	t.queue.AddAfter(k, max(d, electionRetry(t.a.s.RenewPeriod)))
}

// dropForeign removes the keys of the other rings found on an object from
// the labels and annotations of its placement's patch: none of them
// holds it any more (heldByAnotherRing), and once placed, it belongs to
// this ring alone.
func dropForeign(labels, annotations map[string]any, foreign []foreignRing) {
	for _, f := range foreign {
		k := f.keys()
		labels[k.Owner], labels[k.Bucket] = nil, nil
		annotations[k.Granted], annotations[k.Next] = nil, nil
	}
}
