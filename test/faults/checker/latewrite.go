package checker

import (
	"slices"
	"sort"
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
// update writes under keys this rule does not read. The delete handler's
// results (DeleteHandler) are not judged at all: an adopter completes a
// deletion under the retired member's grant, with no claim, and that
// member may be one the adopter once handed the object to; without the
// ring's epoch the rule cannot tell that from the old owner's late result. members maps member names
// to their replicas' POD_IDs (from the members' Leases); a writer's
// member is any member name of its POD_ID. It returns the late writes
// and how many new results it judged.
func LateWrites(versions []Version, members map[string]string) ([]LateWrite, int) {
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
