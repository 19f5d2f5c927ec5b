// Package checker finds, in the probes' activity records and the fault
// log, every moment at which two actors (processes) were active on one
// object at once: what sharding promises never happens. It also measures
// each fault: how long until another actor took the victim's objects
// over, the gap between the old owner's last activity and the new
// owner's first, and create handlers that completed twice. It trusts
// nothing but the records, which every process stamps with one machine's
// clock, so moments from different processes compare directly.
package checker

import (
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/kopf-go/kopf/test/faults/activity"
	"github.com/kopf-go/kopf/test/faults/faultlog"
)

// AfterResumeWindow is the first instant after a SIGCONT, before a
// resumed replica can notice that it lost its membership: its goroutines
// run on at once, with timers that fired during the pause. Its activity
// then is reported apart (AfterResume) rather than as overlaps, with its
// measured length; the library documents what a resumed replica may do
// in it. Activity past it is an overlap like any other.
const AfterResumeWindow = 250 * time.Millisecond

// LookBack is how recent an actor's activity on an object must be at a
// fault's start for the object to count as the victim's: daemons beat
// every 50 ms, so a live owner is never longer silent.
const LookBack = time.Second

// AroundWindow is how long after its end a fault still counts as one
// around an overlap: what a fault sets off (a fence, an expiry, a move)
// comes within a lease duration and a shutdown grace of it.
const AroundWindow = 40 * time.Second

// Input is what the checker reads.
type Input struct {
	Records []activity.Record
	Faults  []faultlog.Entry
	// Until is when the run ended; faults still on end there.
	Until int64
	// Origin is the moment printed as +0; zero: the earliest one seen.
	Origin int64
	// Versions are every version of every object a watcher saw, in
	// resourceVersion order per object, and Members maps the member names
	// seen in the ring's Leases to their POD_IDs: for the rule of late
	// writes (LateWrites).
	Versions []Version
	Members  map[string]string
	// MembersHeld is when each member's Lease was last seen held
	// (UnixNano), by a listing every LeasePoll: a member whose Lease is
	// gone has been retired, and its adopters work on its objects under
	// its grant.
	MembersHeld map[string]int64
	LeasePoll   time.Duration
}

// Overlap is a stretch during which two actors were active on an object.
type Overlap struct {
	Object string
	A, B   string
	Interval
	// Around are the faults and process events near it.
	Around []faultlog.Entry
	// Cause is the fault most likely behind it (see cause); Kind "" if
	// no fault was around.
	Cause faultlog.Entry
}

// AfterResume is what a resumed actor did in the first instant after its
// SIGCONT on objects that others had taken over meanwhile.
type AfterResume struct {
	Actor   string
	Cont    int64
	Objects []string
	Records int
	// MaxDelay is the latest of those records, after the SIGCONT.
	MaxDelay time.Duration
	// Last is how long after the SIGCONT the actor was still active on
	// those objects; past AfterResumeWindow, that is in the overlaps.
	Last time.Duration
}

// Gap is the time from an old owner's last activity on an object to the
// new owner's first; negative when they overlapped.
type Gap struct {
	Object, Old, New string
	Gap              time.Duration
}

// Takeover is what became of one fault's victim's objects.
type Takeover struct {
	Fault faultlog.Entry
	// Objects is how many objects the victim was active on at the start,
	// Moved how many of them another actor became active on after it, and
	// Gone how many of the others had their deletion completed meanwhile
	// (by anyone, a second ring's replica too), leaving nothing to take
	// over.
	Objects, Moved, Gone int
	// Later counts the objects that moved only after a later fault hit
	// the same victim (the same process): that move is the later fault's,
	// measured there, and neither counted nor timed here.
	Later int
	// First and All are the times from the fault's start to the first
	// new activity on the first and on the last of the moved objects.
	First, All time.Duration
	Gaps       []Gap
}

// Duplicate is a create handler that completed more than once for one
// object: allowed (handling is at least once), and counted.
type Duplicate struct {
	Object, UID string
	Actors      []string
	Ends        []int64
	// Kind is the fault that hit the first actor before the second run
	// completed; "" if none did.
	Kind string
}

// Report is everything the checker found.
type Report struct {
	Overlaps    []Overlap
	AfterResume []AfterResume
	Takeovers   []Takeover
	Duplicates  []Duplicate
	Kinds       []KindFigures
	// LateWrites are the results that landed on a version granted to
	// another member than their writer's; Judged counts the new results
	// the rule looked at, Unjudged the versions after a gap of the
	// watcher's that it did not.
	LateWrites       []LateWrite
	Judged, Unjudged int
	// Origin is the earliest moment seen, for printing times relative to it.
	Origin int64
}

// Check reads the records and the faults.
func Check(in Input) Report {
	all := runs(in.Records)
	ps := pauses(in.Faults, in.Until)
	// active[object][actor] is the union of the actor's activity there.
	active := map[string]map[string][]Interval{}
	var resumes []resumed
	for _, x := range all {
		segs, after := split(x, ps[x.actor])
		if active[x.object] == nil {
			active[x.object] = map[string][]Interval{}
		}
		active[x.object][x.actor] = append(active[x.object][x.actor], segs...)
		resumes = append(resumes, after...)
	}
	for _, byActor := range active {
		for a, segs := range byActor {
			byActor[a] = union(segs)
		}
	}
	r := Report{Origin: in.Origin}
	if r.Origin == 0 {
		r.Origin = origin(in)
	}
	r.Overlaps = overlaps(active, in.Faults, in.Until)
	r.AfterResume = afterResume(resumes, active)
	r.Takeovers = takeovers(active, deletions(all), in.Faults)
	r.Duplicates = duplicates(all, in.Faults)
	r.Kinds = kinds(r, in.Faults)
	r.LateWrites, r.Judged = LateWrites(in.Versions, in.Members, lives(all, in.Faults, in.Until, in.MembersHeld, in.LeasePoll))
	for _, v := range in.Versions {
		if v.AfterGap {
			r.Unjudged++
		}
	}
	return r
}

// overlaps compares every two actors of every object.
func overlaps(active map[string]map[string][]Interval, faults []faultlog.Entry, until int64) []Overlap {
	var out []Overlap
	for object, byActor := range active {
		actors := make([]string, 0, len(byActor))
		for a := range byActor {
			actors = append(actors, a)
		}
		sort.Strings(actors)
		for i, a := range actors {
			for _, b := range actors[i+1:] {
				for _, in := range intersect(byActor[a], byActor[b]) {
					o := Overlap{Object: object, A: a, B: b, Interval: in, Around: around(faults, in, until, a, b)}
					old := a
					if startOf(byActor[b], in.From) < startOf(byActor[a], in.From) {
						old = b
					}
					o.Cause = cause(o, old)
					out = append(out, o)
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].From < out[j].From })
	return out
}

// around are the faults on at the interval or over less than
// AroundWindow before it, and the starts and exits of the two actors'
// processes within AroundWindow of it either way.
func around(faults []faultlog.Entry, in Interval, until int64, a, b string) []faultlog.Entry {
	var out []faultlog.Entry
	for _, f := range faults {
		start, end := f.Span(until)
		switch {
		case f.IsFault() && start <= in.To && end+int64(AroundWindow) >= in.From:
		case !f.IsFault() && (f.Actor == a || f.Actor == b) &&
			start <= in.To+int64(AroundWindow) && end+int64(AroundWindow) >= in.From:
		default:
			continue
		}
		out = append(out, f)
	}
	return out
}

// cause is the fault most likely behind an overlap, among the faults
// around it that began before it ended, best first: one that brought in
// either actor from outside the ring (a second ring); one that hit the
// old owner (the actor that was active first), other than churn; one
// that hit either actor, other than churn; a second ring around it,
// which moves owner labels of every object; churn of either actor (a
// join or a leave is the ring's everyday business, and the weakest
// suspect); the latest of the best. A fault hits an actor
// it names, a replica it names without an actor (a join), or a replica
// it brought in. A fault of one object (a label edit) hits only that
// object, and a fault of a process does not hit that replica's later
// processes. None of these: no cause (Kind ""), rather than a guess.
func cause(o Overlap, old string) faultlog.Entry {
	hits := func(f faultlog.Entry, actor string) bool {
		r := replica(actor)
		return (f.Object == "" || f.Object == o.Object) &&
			(f.Actor == actor || (f.Actor == "" && f.Replica == r) || slices.Contains(f.Members, r))
	}
	var best faultlog.Entry
	bestScore := 0
	for _, f := range o.Around {
		if !f.IsFault() || f.Start > o.To {
			continue
		}
		churn := f.Kind == faultlog.Join || f.Kind == faultlog.Leave
		score := 0
		switch {
		case f.Kind == faultlog.SecondRing && (hits(f, o.A) || hits(f, o.B)):
			score = 5
		case hits(f, old) && !churn:
			score = 4
		case (hits(f, o.A) || hits(f, o.B)) && !churn:
			score = 3
		case f.Kind == faultlog.SecondRing:
			score = 2
		case hits(f, o.A) || hits(f, o.B):
			score = 1
		}
		if score > 0 && (score > bestScore || (score == bestScore && f.Start >= best.Start)) {
			best, bestScore = f, score
		}
	}
	return best
}

// startOf is the start of the interval that holds the moment.
func startOf(segs []Interval, at int64) int64 {
	for _, s := range segs {
		if s.From <= at && at <= s.To {
			return s.From
		}
	}
	return at
}

// replica is the POD_ID of an actor (POD_ID/pid).
func replica(actor string) string {
	podID, _, _ := strings.Cut(actor, "/")
	return podID
}

// afterResume sums, per SIGCONT, what the resumed actor did in the
// window on objects that another actor was active on in it.
func afterResume(resumes []resumed, active map[string]map[string][]Interval) []AfterResume {
	type key struct {
		actor string
		cont  int64
	}
	byKey := map[key]*AfterResume{}
	var order []key
	for _, x := range resumes {
		if len(x.times) == 0 || !takenBy(active[x.object], x.actor, x.span) {
			continue
		}
		k := key{x.actor, x.cont}
		ar := byKey[k]
		if ar == nil {
			ar = &AfterResume{Actor: x.actor, Cont: x.cont}
			byKey[k] = ar
			order = append(order, k)
		}
		if !slices.Contains(ar.Objects, x.object) {
			ar.Objects = append(ar.Objects, x.object)
		}
		ar.Records += len(x.times)
		ar.MaxDelay = max(ar.MaxDelay, time.Duration(x.times[len(x.times)-1]-x.cont))
		ar.Last = max(ar.Last, time.Duration(x.last-x.cont))
	}
	var out []AfterResume
	for _, k := range order {
		sort.Strings(byKey[k].Objects)
		out = append(out, *byKey[k])
	}
	return out
}

// takenBy reports whether an actor other than self was active in span.
func takenBy(byActor map[string][]Interval, self string, span Interval) bool {
	for a, segs := range byActor {
		if a != self && len(intersect(segs, []Interval{{span.From - 1, span.To + 1}})) > 0 {
			return true
		}
	}
	return false
}

// origin is the earliest moment of the input.
func origin(in Input) int64 {
	var o int64
	for _, r := range in.Records {
		if o == 0 || r.At < o {
			o = r.At
		}
	}
	for _, f := range in.Faults {
		if o == 0 || f.Start < o {
			o = f.Start
		}
	}
	return o
}
