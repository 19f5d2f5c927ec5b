package checker

import (
	"slices"
	"sort"
	"time"

	"github.com/kopf-go/kopf/test/faults/faultlog"
)

// Version is one version of an object as a watcher saw it: the watcher
// gives every version of an object in resourceVersion order.
type Version struct {
	Object, UID, RV string
	// At is when the watcher saw it (UnixNano).
	At int64
	// Owner and Grant are the owner label's and the grant's values.
	Owner, Grant string
	// Results are the change handlers' results, by handler id: each names
	// the actor that wrote it.
	Results map[string]Result
	// AfterGap says the watcher may have missed versions just before this
	// one (it listed anew): what changed since the one before is not
	// judged.
	AfterGap bool
}

// Result is a handler's result as the probe writes it: its writer and
// the run's number.
type Result struct {
	Actor string
	Run   int64
}

// DeleteHandler is the id of the probe's delete handler.
const DeleteHandler = "delete"

// LateWrite is a result that landed on an object when the version it was
// written on was granted to another member than the writer's: a write
// that a fence should have refused.
type LateWrite struct {
	Object, UID, RV, Handler string
	Writer                   string
	// Grant is the grant of the version before, GrantHolder the POD_ID of
	// that member ("" if no member of that name was seen).
	Grant, GrantHolder string
	At                 int64
}

// Lives are what the rule of late writes knows of the writers beyond the
// versions: when each result's run began (Runs, by its actor and run),
// when each replica had a process running (Processes, by POD_ID), and
// until when each member's Lease was seen held (Held, by member name, at
// most Poll before it went).
type Lives struct {
	Runs      map[Result]int64
	Processes map[string][]Interval
	Held      map[string]int64
	Poll      time.Duration
}

// goneMember says whether the run behind a result began after the
// member's Lease was gone (deleted or released): the ring had retired the
// member by then, so the writer may be its adopter, which works on its
// objects under its grant. A run that began within a poll of the last
// sighting is judged: the Lease may still have been there.
func (l Lives) goneMember(r Result, member string) bool {
	began, ok := l.Runs[r]
	held, seen := l.Held[member]
	return ok && seen && began > held+int64(l.Poll)
}

// orphaned says whether the run behind a result began while no process
// of the replica ran: a run its member's adopter may make under that
// member's grant. Without the run's start or any lifetime of the
// replica, it says false, and the result is judged.
func (l Lives) orphaned(r Result, replica string) bool {
	began, ok := l.Runs[r]
	if !ok || len(l.Processes[replica]) == 0 {
		return false
	}
	for _, p := range l.Processes[replica] {
		if p.From <= began && began <= p.To {
			return false
		}
	}
	return true
}

// lives reads the runs' starts from the records and the processes'
// lifetimes from the fault log; a process still running at the end lives
// until until.
func lives(all []*run, faults []faultlog.Entry, until int64, held map[string]int64, poll time.Duration) Lives {
	l := Lives{Runs: map[Result]int64{}, Processes: map[string][]Interval{}, Held: held, Poll: poll}
	for _, x := range all {
		l.Runs[Result{Actor: x.actor, Run: x.number}] = x.from
	}
	started := map[string]int64{}
	for _, e := range faults {
		switch e.Kind {
		case faultlog.ProcessStart:
			started[e.Actor] = e.Start
		case faultlog.ProcessExit:
			if from, ok := started[e.Actor]; ok {
				l.Processes[e.Replica] = append(l.Processes[e.Replica], Interval{From: from, To: e.Start})
				delete(started, e.Actor)
			}
		}
	}
	for actor, from := range started {
		l.Processes[replica(actor)] = append(l.Processes[replica(actor)], Interval{From: from, To: max(until, from)})
	}
	return l
}

// LateWrites applies the rule of late writes: a result that is new in a
// version (another actor or run than the version before had under that
// handler id), by a writer whose member held the object's grant on an
// earlier version, must have been written on a version granted to its
// writer's member. Once an object's grant has moved from the writer's
// member to another, no later version carries a new result of that
// writer until the grant names the writer's member again. A writer that
// never held the grant is not judged: an adopter works on a retired
// member's objects under that member's grant until it claims them (and
// completes a deletion without a claim), and a ring renamed in a rolling
// update writes under keys this rule does not read. Nor is a result whose
// run began while no process of the grant's member's replica ran, or
// after the grant's member's Lease was gone (lives): that member was
// retired, and the writer, which may once have held the grant itself,
// can be its adopter (a replica restarted under a new member name runs
// while its old member is retired). The delete handler's results
// (DeleteHandler) are not judged at all: an adopter completes a deletion
// under the retired member's grant, with no claim, and that member may
// be one the adopter once handed the object to, still running; without
// the ring's epoch the rule cannot tell that from the old owner's late
// result. members maps member names to their replicas' POD_IDs (from the
// members' Leases); a writer's member is any member name of its POD_ID.
// It returns the late writes and how many new results it judged.
func LateWrites(versions []Version, members map[string]string, lives Lives) ([]LateWrite, int) {
	byObject := map[string][]Version{}
	var order []string
	for _, v := range versions {
		k := v.Object + "\x00" + v.UID
		if _, ok := byObject[k]; !ok {
			order = append(order, k)
		}
		byObject[k] = append(byObject[k], v)
	}
	var out []LateWrite
	judged := 0
	for _, k := range order {
		vs := byObject[k]
		held := map[string]bool{} // the replicas whose members held the grant
		if len(vs) > 0 && vs[0].Grant != "" {
			held[members[vs[0].Grant]] = true
		}
		for i := 1; i < len(vs); i++ {
			prev, v := vs[i-1], vs[i]
			if prev.Grant != "" {
				held[members[prev.Grant]] = true
			}
			if v.AfterGap || v.RV == prev.RV {
				continue
			}
			ids := make([]string, 0, len(v.Results))
			for id := range v.Results {
				ids = append(ids, id)
			}
			sort.Strings(ids)
			for _, id := range ids {
				r := v.Results[id]
				if r == prev.Results[id] || r.Actor == "" || id == DeleteHandler {
					continue
				}
				holder := members[prev.Grant]
				if !held[replica(r.Actor)] {
					continue // never its to write: an adopter's, or another ring's
				}
				if prev.Grant != "" && (lives.orphaned(r, holder) || lives.goneMember(r, prev.Grant)) {
					continue // run for a retired member: possibly its adopter's
				}
				judged++
				if prev.Grant != "" && holder == replica(r.Actor) {
					continue
				}
				out = append(out, LateWrite{Object: v.Object, UID: v.UID, RV: v.RV, Handler: id, Writer: r.Actor,
					Grant: prev.Grant, GrantHolder: holder, At: v.At})
			}
		}
	}
	slices.SortStableFunc(out, func(a, b LateWrite) int { return int(a.At - b.At) })
	return out, judged
}
