package sharding

import "slices"

// Placement is where an object stands in its ring, as its labels and
// annotations say. Owner is the owner label, which selects the object into
// a member's cache. Granted is the member that was last given the object
// by someone entitled to (the assigner, or the previous owner's
// acknowledgement); a member handles an object only while both name it.
// Next, if set, is the member the assigner has asked Granted to hand the
// object over to.
type Placement struct {
	Owner, Granted, Next string
}

// Handled reports whether member may work on the object: the owner label
// and the grant both name it. An owner label edited by hand names a member
// that was granted nothing, and that member must not start before the
// granted one has stopped.
func (p Placement) Handled(member string) bool {
	return member != "" && p.Owner == member && p.Granted == member
}

// Move is what the assigner writes to an object. Owner: the owner label
// and the grant are set to it, and the handover request is set to Next or
// removed; only for objects that no live member may be working on, or to
// put a hand-edited owner label back to the granted member. Otherwise
// Next: the handover request is set to it (or removed, when ClearNext);
// the granted member moves the label and the grant itself once it has let
// go.
type Move struct {
	Owner     string
	Next      string
	ClearNext bool
}

// Place decides the assigner's write for one object, given the live
// members (sorted or not) and which members that are not live may still
// be working (doubtful; nil: none); false: nothing to write.
//
// The grant, not the owner label, tells who may be working on the object:
// only the assigner and an acknowledging owner write it, while a label can
// be edited by anyone. An object granted to nobody live (new, or its
// member's Lease released, or expired and confirmed so) gets its owner at
// once: nobody works on it. One granted to a member that is not live but
// may still be working (a new assigner's doubt about a member it never
// saw) waits. An object granted to a live member stays with that member
// until it lets go: if the label was changed under it, the label is put
// back; if hashing wants another member, the granted one is asked to
// hand it over. Without live members nothing moves.
func Place(uid string, p Placement, live []string, doubtful func(member string) bool) (Move, bool) {
	want := Owner(uid, live)
	granted := slices.Contains(live, p.Granted)
	switch {
	case want == "":
		return Move{}, false
	case !granted && p.Granted != "" && doubtful != nil && doubtful(p.Granted):
		return Move{}, false
	case !granted:
		return Move{Owner: want}, true
	case p.Owner != p.Granted:
		mv := Move{Owner: p.Granted}
		if want != p.Granted {
			mv.Next = want
		}
		return mv, true
	case want == p.Granted && p.Next != "":
		return Move{ClearNext: true}, true // the ring changed back
	case want != p.Granted && p.Next != want:
		return Move{Next: want}, true
	}
	return Move{}, false
}
