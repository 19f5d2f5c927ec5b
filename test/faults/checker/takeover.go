package checker

import (
	"slices"
	"sort"
	"time"

	"github.com/kopf-go/kopf/test/faults/activity"
	"github.com/kopf-go/kopf/test/faults/faultlog"
)

// takeovers measures every fault that has a victim: which objects the
// victim was active on as it began, and when another actor became active
// on each of them.
func takeovers(active map[string]map[string][]Interval, deleted map[string]int64, faults []faultlog.Entry) []Takeover {
	var out []Takeover
	outsiders := map[string]bool{}
	for _, f := range faults {
		for _, m := range f.Members {
			outsiders[m] = true
		}
	}
	// others are the actors that may take an object over from a victim:
	// not the victim, and not a replica that a fault brought in from
	// outside the ring (a second ring), whose activity is no takeover.
	others := func(byActor map[string][]Interval, victim string) map[string][]Interval {
		out := map[string][]Interval{}
		for a, segs := range byActor {
			if a != victim && !outsiders[replica(a)] {
				out[a] = segs
			}
		}
		out[victim] = byActor[victim]
		return out
	}
	for _, f := range faults {
		if !f.IsFault() || f.Actor == "" {
			continue
		}
		t := Takeover{Fault: f, First: -1, All: -1}
		for _, object := range victimObjects(active, deleted, f, LookBack) {
			t.Objects++
			g, ok := takeover(others(active[object], f.Actor), f.Actor, f.Start)
			if !ok {
				if deleted[object] > f.Start {
					t.Gone++
				}
				continue
			}
			if laterFault(faults, f, firstNew(others(active[object], f.Actor), f.Actor, f.Start)) {
				t.Later++
				continue
			}
			g.Object = object
			t.Moved++
			t.Gaps = append(t.Gaps, g)
		}
		for _, g := range t.Gaps {
			first := firstNew(others(active[g.Object], f.Actor), f.Actor, f.Start) - f.Start
			if t.First < 0 || time.Duration(first) < t.First {
				t.First = time.Duration(first)
			}
			t.All = max(t.All, time.Duration(first))
		}
		out = append(out, t)
	}
	return out
}

// laterFault reports whether another fault hit the same victim process
// after f began and before moved: the move is that fault's (a label
// edited by hand moves nothing, and the replica killed a minute later
// moves it all). After a fault that moves nothing (MovesNothing), so is a
// move after the victim's process exited: whatever ended it (a rollout
// of a renamed ring, a leave) moved the object, not the fault.
func laterFault(faults []faultlog.Entry, f faultlog.Entry, moved int64) bool {
	for _, g := range faults {
		if g.ID == f.ID || g.Actor != f.Actor || g.Start <= f.Start || g.Start >= moved {
			continue
		}
		if g.IsFault() || g.Kind == faultlog.ProcessExit && MovesNothing(f.Kind) {
			return true
		}
	}
	return false
}

// MovesNothing tells the faults that must not move the victim's objects:
// an owner label edited by hand (the ring puts it back), and a stalled
// watch (the victim's Lease renews all along).
func MovesNothing(kind string) bool {
	switch kind {
	case faultlog.LabelEdited, faultlog.LeaseWatchStalled, faultlog.ShareWatchStalled:
		return true
	}
	return false
}

// victimObjects are the objects the fault's actor was active on in the
// window before its start; only the fault's object, if it names one.
// An object whose delete handler had completed by then is left out: a
// daemon that ignores its stop may still run for it, but nothing is left
// for anyone to take over.
func victimObjects(active map[string]map[string][]Interval, deleted map[string]int64, f faultlog.Entry, within time.Duration) []string {
	window := []Interval{{f.Start - int64(within), f.Start}}
	var out []string
	for object, byActor := range active {
		if (f.Object != "" && object != f.Object) || (deleted[object] != 0 && deleted[object] <= f.Start) {
			continue
		}
		if len(intersect(byActor[f.Actor], window)) > 0 || touches(byActor[f.Actor], f.Start) {
			out = append(out, object)
		}
	}
	sort.Strings(out)
	return out
}

// ActiveObjects are the objects that a fault beginning now would find
// the actor active on, as the checker will count them, with activity
// within the window before now: a suite picks its victims by it, so that
// a fault never finds its victim idle in the checker's eyes while the
// suite saw it busy (an object whose deletion the actor completed, say,
// or a run of a single record, which has no length).
func ActiveObjects(records []activity.Record, actor string, now time.Time, window time.Duration) []string {
	all := runs(records)
	active := map[string]map[string][]Interval{}
	for _, x := range all {
		if x.actor != actor {
			continue
		}
		if active[x.object] == nil {
			active[x.object] = map[string][]Interval{}
		}
		active[x.object][actor] = append(active[x.object][actor], Interval{x.from, x.to})
	}
	for _, byActor := range active {
		byActor[actor] = union(byActor[actor])
	}
	return victimObjects(active, deletions(all), faultlog.Entry{Actor: actor, Start: now.UnixNano()}, window)
}

// touches reports whether an interval holds the moment.
func touches(segs []Interval, at int64) bool {
	for _, s := range segs {
		if s.From <= at && at <= s.To {
			return true
		}
	}
	return false
}

// deletions are when each object's delete handler first completed.
func deletions(all []*run) map[string]int64 {
	out := map[string]int64{}
	for _, x := range all {
		if x.what == activity.Delete && x.done && (out[x.object] == 0 || x.to < out[x.object]) {
			out[x.object] = x.to
		}
	}
	return out
}

// firstNew is the first moment, at or after start, at which an actor
// other than the victim began to be active on the object; 0 if none.
func firstNew(byActor map[string][]Interval, victim string, start int64) int64 {
	var first int64
	for a, segs := range byActor {
		if a == victim {
			continue
		}
		for _, s := range segs {
			if s.From >= start && (first == 0 || s.From < first) {
				first = s.From
			}
		}
	}
	return first
}

// takeover is the gap on one object: from the victim's last activity
// while it could still be the owner, to the new actor's beginning. The
// victim's activity counts up to the end of the new actor's first
// stretch there: anything of the victim's before that end overlaps the
// new owner or precedes it, while a stretch after it is the object come
// back to the victim later (a label edited back, say).
func takeover(byActor map[string][]Interval, victim string, start int64) (Gap, bool) {
	first := firstNew(byActor, victim, start)
	if first == 0 {
		return Gap{}, false
	}
	var newActor string
	var stretchEnd int64
	for a, segs := range byActor {
		for _, s := range segs {
			if a != victim && s.From == first && (newActor == "" || a < newActor) {
				newActor, stretchEnd = a, s.To
			}
		}
	}
	var last int64
	for _, s := range byActor[victim] {
		if s.From < stretchEnd {
			last = max(last, s.To)
		}
	}
	return Gap{Old: victim, New: newActor, Gap: time.Duration(first - last)}, true
}

// duplicates are the objects whose create handler completed more than
// once, each laid at the door of the fault that hit the first actor
// last before the second completion.
func duplicates(all []*run, faults []faultlog.Entry) []Duplicate {
	byUID := map[string]*Duplicate{}
	var order []string
	for _, x := range all {
		if x.what != activity.Create || !x.done {
			continue
		}
		d := byUID[x.uid]
		if d == nil {
			d = &Duplicate{Object: x.object, UID: x.uid}
			byUID[x.uid] = d
			order = append(order, x.uid)
		}
		d.Actors = append(d.Actors, x.actor)
		d.Ends = append(d.Ends, x.to)
	}
	var out []Duplicate
	for _, uid := range order {
		d := byUID[uid]
		if len(d.Ends) < 2 {
			continue
		}
		sort.Sort(byEnd{d})
		d.Kind = blame(faults, d.Actors, d.Ends[1])
		out = append(out, *d)
	}
	return out
}

// blame is the fault behind a second completion at the moment: the
// latest that began before it among those that hit the first actor; else
// the latest that hit or brought in the replica of either; else none.
func blame(faults []faultlog.Entry, actors []string, at int64) string {
	replicas := []string{replica(actors[0]), replica(actors[1])}
	var first, either faultlog.Entry
	for _, f := range faults {
		if !f.IsFault() || f.Start > at {
			continue
		}
		if f.Actor == actors[0] && f.Start >= first.Start {
			first = f
		}
		if (slices.Contains(replicas, f.Replica) || slices.ContainsFunc(f.Members, func(m string) bool { return slices.Contains(replicas, m) })) &&
			f.Start >= either.Start {
			either = f
		}
	}
	if first.Kind != "" {
		return first.Kind
	}
	return either.Kind
}

// byEnd sorts a duplicate's completions by time.
type byEnd struct{ d *Duplicate }

func (b byEnd) Len() int           { return len(b.d.Ends) }
func (b byEnd) Less(i, j int) bool { return b.d.Ends[i] < b.d.Ends[j] }
func (b byEnd) Swap(i, j int) {
	b.d.Ends[i], b.d.Ends[j] = b.d.Ends[j], b.d.Ends[i]
	b.d.Actors[i], b.d.Actors[j] = b.d.Actors[j], b.d.Actors[i]
}
