package sharding

import (
	"cmp"
	"maps"
	"slices"
)

// Epoch is what a ring's assigner publishes at every change of members
// (docs/sharding.md, "The ring's epoch" and "Adoption"): the live
// members, and the members that died or left whose objects still carry
// their names, which the live members adopt without a write to them.
//
// Serial counts the publications. Joined is, for each member, the serial
// at which it was first published; Retired, for each retired member, the
// serial at which it was retired. The members that adopt a retired
// member's objects are those that had joined by then: a member that joins
// later takes an adopted object only when its adopter hands it over, as
// it takes any other, so that the two never work on it at once.
//
// Stopping are the members, among Members, whose graceful stop has
// begun: they keep what they hold until they are gone, but nothing new
// is placed on them nor handed over to them (Placing).
//
// Stopped is, for each member whose graceful stop the epoch records, the
// serial of the first epoch that showed it stopping; Held is, for each of
// them, the buckets of each retired member's objects that it adopted
// just before, by the retired member and the serial of its retirement. A
// stopped member adopts those and nothing else: what it may still be
// working on stays with it, and no death gives it anything new, since its
// workers have stopped (docs/sharding.md, "Leaving"). The record stays
// while the member does, even if its replica restarts under its Lease and
// stops stopping, for as long as dropping it would move a bucket.
//
// WrittenBefore is, for each retired member, a resourceVersion that the
// assigner had seen a margin (LeaseDuration - RenewDeadline) before it
// retired the member: a write that landed since has a newer version. Such
// a write may be a late one of the retired member that moved the object
// from another adopter, who stops within the margin, so the object's
// adopter waits out the margin before it starts it (docs/sharding.md,
// "Standing by"). None for a retirement whose assigner had not followed
// the Leases for a margin.
//
// Version is the resourceVersion of the Lease the epoch was read from (""
// if it was not read from one): the API server's order of writes, in
// which the objects' versions compare with it. Assigner is the member
// whose replica published it ("" if none, or unknown): a candidate while
// it leads (Candidates). Neither is part of the epoch's content (Same).
type Epoch struct {
	Serial   int64
	Members  []string
	Joined   map[string]int64
	Retired  map[string]int64
	Stopping []string
	Stopped  map[string]int64
	Held     map[string]map[Retirement]BucketSet
	// WrittenBefore: see above.
	WrittenBefore map[string]string
	Version       string
	Assigner      string
}

// Retirement names a retired member and the serial of its retirement: a
// member retired again (when none of its adopters was left) is another
// retirement, with other adopters.
type Retirement struct {
	Member string
	At     int64
}

// Placing are the members that new objects are placed on and objects are
// handed over to, sorted: the members but those that are stopping, or all
// of them if every one is (a ring that stops whole places where it can).
// Rendezvous hashing over a subset moves nothing between the others: only
// what hashed to a stopping member goes elsewhere. Adoption and standing
// by count every member, stopping or not: a stopping adopter may still be
// working on what it adopted, so nothing it adopted moves until it is gone.
func (e Epoch) Placing() []string { return Placing(e.Members, e.Stopping) }

// Placing are the members but the stopping ones, or all of them if every
// one is stopping (Epoch.Placing).
func Placing(members, stopping []string) []string {
	if len(stopping) == 0 {
		return members
	}
	out := slices.DeleteFunc(slices.Clone(members), func(m string) bool { return slices.Contains(stopping, m) })
	if len(out) == 0 {
		return members
	}
	return out
}

// Adopters are the live members among which the objects of the retired
// member are adopted, sorted: those that had joined when it was retired.
// None if it is not retired, or if none of them is live any more (the
// assigner then retires it again, among the live ones). Members whose
// stop the epoch records are among them, but adopt only what they held
// (Adopter), which may be nothing (Adopts).
func (e Epoch) Adopters(retired string) []string {
	at, ok := e.Retired[retired]
	if !ok {
		return nil
	}
	var out []string
	for _, m := range e.Members {
		if e.Joined[m] <= at {
			out = append(out, m)
		}
	}
	slices.Sort(out)
	return out
}

// Adopter is the member that adopts the object with the given key
// (ObjectKey) whose owner label and grant name the retired member; ""
// if none does. The key is the object's bucket, so a bucket's objects
// have one adopter, each adopter watches only its buckets, and a bucket
// moves only if its adopter dies; among adopters that are the live
// members, the adopter is the object's owner.
//
// A member whose stop the epoch records adopts only the buckets it held
// (Held); the others go to the adopters that do not stop, or, if every
// one of them does, to the adopters as if none did.
func (e Epoch) Adopter(key, retired string) string {
	at, ok := e.Retired[retired]
	if !ok {
		return ""
	}
	// Owner over the adopters, and over those that go on, in one pass
	// without allocations: every reconcile of an adopted object asks.
	var first, going string
	var best, bestGoing uint64
	for _, m := range e.Members {
		if e.Joined[m] > at {
			continue
		}
		if held, ok := e.Held[m][Retirement{retired, at}]; ok && held.Has(key) {
			return m
		}
		s := score(key, m)
		if first == "" || s > best || s == best && m < first {
			first, best = m, s
		}
		if _, stopped := e.Stopped[m]; !stopped && (going == "" || s > bestGoing || s == bestGoing && m < going) {
			going, bestGoing = m, s
		}
	}
	return cmp.Or(going, first)
}

// Adopts reports whether the member adopts any bucket of the retired
// member's objects.
func (e Epoch) Adopts(retired, member string) bool {
	if !slices.Contains(e.Adopters(retired), member) {
		return false
	}
	for _, b := range AllBuckets() {
		if e.Adopter(b, retired) == member {
			return true
		}
	}
	return false
}

// AdoptedElsewhere are the buckets of the retired member's objects that
// other adopters than the member adopt, sorted by number; none if the
// member adopts them all, or none (Adopts).
func (e Epoch) AdoptedElsewhere(retired, member string) []string {
	if !e.Adopts(retired, member) {
		return nil
	}
	var out []string
	for _, b := range AllBuckets() {
		if e.Adopter(b, retired) != member {
			out = append(out, b)
		}
	}
	return out
}

// Standby are the buckets, sorted by number, whose objects the member
// would adopt if their owner died or left now: those it comes second to
// among the epoch's members (the owner's adopters would be the others).
// The member watches them before any death, so that a takeover lists
// nothing (docs/sharding.md, "Standing by"). None if it is no member, or
// the only one, or its stop is recorded (it adopts from no later death):
// the owner of a bucket whose owner among the members is stopped is the
// first of those that do not stop.
func (e Epoch) Standby(member string) []string {
	going := e.going()
	if len(e.Members) < 2 || !slices.Contains(going, member) {
		return nil
	}
	var out []string
	for _, b := range AllBuckets() {
		next := Second(b, going)
		if _, stopped := e.Stopped[Owner(b, e.Members)]; stopped {
			next = Owner(b, going)
		}
		if next == member {
			out = append(out, b)
		}
	}
	return out
}

// going are the members whose stop the epoch does not record.
func (e Epoch) going() []string {
	if len(e.Stopped) == 0 {
		return e.Members
	}
	return slices.DeleteFunc(slices.Clone(e.Members), func(m string) bool {
		_, stopped := e.Stopped[m]
		return stopped
	})
}

// Orphaned reports whether the retired member's adopters all joined at
// its retirement: none of them was a member before, so the ring had no
// live member for a while (a restart of every replica, or of an old
// ring's replica during a rollout that renamed the ring), long enough
// for another ring to judge this one gone and take its objects. Their
// adopters claim such objects before working on them when another ring
// is about (docs/sharding.md, "Renaming a ring, or moving its Leases").
func (e Epoch) Orphaned(retired string) bool {
	at, ok := e.Retired[retired]
	if !ok {
		return false
	}
	adopters := e.Adopters(retired)
	for _, m := range adopters {
		if e.Joined[m] < at {
			return false
		}
	}
	return len(adopters) > 0
}

// IsRetired reports whether the member's objects are adopted.
func (e Epoch) IsRetired(member string) bool {
	_, ok := e.Retired[member]
	return ok
}

// RetiredNames are the retired members, sorted.
func (e Epoch) RetiredNames() []string {
	return slices.Sorted(maps.Keys(e.Retired))
}

// Next is the epoch after this one, for the assigner: the members live
// now, those that were published and are not live any more retired, the
// retired members none of whose adopters is live retired again among the
// live ones, and those in gone dropped (no object carries their names any
// more). A retired member stays retired, even if live names it: it was
// retired once its death was confirmed or it released its Lease, so its
// name runs nowhere any more, and only an observer's stale view of its
// Lease can count it live (a new assigner's that never saw the Lease
// deleted); its adopters work on its objects. The members among stopping
// are the next epoch's Stopping. Its serial is the next one if anything
// changed; unchanged is true if nothing did.
//
// A stopping member's stop is recorded (Stopped, Held) only if no member
// is among unaware: those whose version adopts by the rule before the
// record, which would disagree with the others about a bucket that a
// death gives a stopped member. A recorded stop stays.
func (e Epoch) Next(live, stopping, gone, unaware []string) (next Epoch, unchanged bool) {
	serial := e.Serial + 1
	live = slices.DeleteFunc(slices.Clone(live), e.IsRetired)
	next = Epoch{Serial: serial, Members: slices.Sorted(slices.Values(live)),
		Joined: map[string]int64{}, Retired: map[string]int64{}}
	next.Members = slices.Compact(next.Members)
	for _, m := range next.Members {
		if slices.Contains(stopping, m) {
			next.Stopping = append(next.Stopping, m)
		}
	}
	for _, m := range next.Members {
		if at, ok := e.Joined[m]; ok && slices.Contains(e.Members, m) {
			next.Joined[m] = at
		} else {
			next.Joined[m] = serial
		}
	}
	for r, at := range e.Retired {
		if !slices.Contains(gone, r) && !slices.Contains(next.Members, r) {
			next.Retired[r] = at
		}
	}
	for _, m := range e.Members {
		if !slices.Contains(next.Members, m) && !slices.Contains(gone, m) {
			next.Retired[m] = serial
		}
	}
	for r := range next.Retired {
		if len(next.Members) > 0 && len(next.Adopters(r)) == 0 {
			next.Retired[r] = serial
		}
	}
	for r, at := range next.Retired {
		if v := e.WrittenBefore[r]; v != "" && e.Retired[r] == at {
			next.versionBefore(r, v)
		}
	}
	next.recordStops(e, unaware)
	if next.Same(e) {
		return e, true
	}
	return next, false
}

// recordStops carries the recorded stops of the epoch before (prev) into
// this one, the next, and records those that began: each stopped member
// holds what prev gave it. A record whose member no longer stops is
// dropped as soon as that moves no bucket.
func (next *Epoch) recordStops(prev Epoch, unaware []string) {
	record := !slices.ContainsFunc(next.Members, func(m string) bool { return slices.Contains(unaware, m) })
	for _, m := range next.Members {
		at, kept := prev.Stopped[m]
		switch {
		case kept && slices.Contains(prev.Members, m):
			next.stopped(m, at)
			for r, held := range prev.Held[m] {
				if next.Retired[r.Member] == r.At {
					next.held(m, r, held)
				}
			}
		case record && slices.Contains(next.Stopping, m):
			next.stopped(m, next.Serial)
			for r, at := range next.Retired {
				if at >= next.Serial {
					continue
				}
				var held BucketSet
				for _, b := range AllBuckets() {
					if prev.Adopter(b, r) == m {
						held.Add(b)
					}
				}
				if !held.Empty() {
					next.held(m, Retirement{r, at}, held)
				}
			}
		}
	}
	for m := range next.Stopped {
		if !slices.Contains(next.Stopping, m) && !next.movesWithout(m) {
			delete(next.Stopped, m)
			delete(next.Held, m)
		}
	}
	if len(next.Stopped) == 0 {
		next.Stopped, next.Held = nil, nil
	}
}

// versionBefore records the version written before a retirement.
func (e *Epoch) versionBefore(retired, version string) {
	if e.WrittenBefore == nil {
		e.WrittenBefore = map[string]string{}
	}
	e.WrittenBefore[retired] = version
}

// RecordWrittenBefore notes, for each member that this epoch retires and
// the one before (prev) did not, the version written before its
// retirement (WrittenBefore); nothing if version is "".
func (e *Epoch) RecordWrittenBefore(prev Epoch, version string) {
	if version == "" {
		return
	}
	for r, at := range e.Retired {
		if prev.Retired[r] != at {
			e.versionBefore(r, version)
		}
	}
}

// stopped records the member's stop at the serial.
func (e *Epoch) stopped(member string, at int64) {
	if e.Stopped == nil {
		e.Stopped = map[string]int64{}
	}
	e.Stopped[member] = at
}

// held records the buckets of a retirement that a stopped member holds.
func (e *Epoch) held(member string, r Retirement, buckets BucketSet) {
	if e.Held == nil {
		e.Held = map[string]map[Retirement]BucketSet{}
	}
	if e.Held[member] == nil {
		e.Held[member] = map[Retirement]BucketSet{}
	}
	e.Held[member][r] = buckets
}

// movesWithout reports whether dropping the member's recorded stop would
// give any bucket of a retired member's objects another adopter.
func (e Epoch) movesWithout(member string) bool {
	without := e
	without.Stopped = maps.Clone(e.Stopped)
	without.Held = maps.Clone(e.Held)
	delete(without.Stopped, member)
	delete(without.Held, member)
	for r := range e.Retired {
		for _, b := range AllBuckets() {
			if e.Adopter(b, r) != without.Adopter(b, r) {
				return true
			}
		}
	}
	return false
}

// Same reports whether two epochs say the same, whatever their serials.
func (e Epoch) Same(other Epoch) bool {
	return slices.Equal(e.Members, other.Members) && maps.Equal(e.Joined, other.Joined) &&
		maps.Equal(e.Retired, other.Retired) && slices.Equal(e.Stopping, other.Stopping) &&
		maps.Equal(e.Stopped, other.Stopped) && maps.EqualFunc(e.Held, other.Held, maps.Equal) &&
		maps.Equal(e.WrittenBefore, other.WrittenBefore)
}

// Candidates are the k members that follow every member's Lease and
// campaign to be the ring's assigner (docs/sharding.md, "Candidates"):
// the assigner, if it is a member, and the longest-standing others, by
// the serial at which they joined, then by name, those that stop only if
// fewer do not. The rest watch the epoch and the election alone, so that
// what a ring receives of its Leases grows with its size, not with its
// square. The oldest, because a join then changes no candidate: only a
// candidate's leave or stop, or a new assigner, brings in another, which
// then starts following. None without members (a ring before its first
// epoch: every replica campaigns).
func (e Epoch) Candidates(k int) []string {
	var out []string
	others := slices.Clone(e.Members)
	if k > 0 && slices.Contains(others, e.Assigner) {
		out = append(out, e.Assigner)
		others = slices.DeleteFunc(others, func(m string) bool { return m == e.Assigner })
		k--
	}
	slices.SortStableFunc(others, func(a, b string) int {
		return cmp.Or(cmp.Compare(btoi(slices.Contains(e.Stopping, a)), btoi(slices.Contains(e.Stopping, b))),
			cmp.Compare(e.Joined[a], e.Joined[b]))
	})
	out = append(out, others[:min(k, len(others))]...)
	slices.Sort(out)
	return out
}

// btoi orders false before true.
func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
