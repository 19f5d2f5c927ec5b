package sharding

import "slices"

// Placement is where an object stands in its ring, as its labels and
// annotations say: Owner handles it; Next, if set, is the member the
// assigner has asked Owner to hand it over to.
type Placement struct {
	Owner, Next string
}

// Move is what the assigner writes to an object. Owner: the owner label
// is set to it directly (and a handover request removed); only for
// objects that no live member handles. Next: the handover annotation is
// set to it (or removed, when ClearNext); the live owner moves the label
// itself once it has let go.
type Move struct {
	Owner     string
	Next      string
	ClearNext bool
}

// Place decides the assigner's write for one object, given the live
// members (sorted or not); false: nothing to write.
//
// An object without a live owner (new, unowned, or its owner's Lease
// expired or deleted) gets its owner at once: nobody handles it, and a
// member stops handling objects before its Lease can expire (it fences
// itself) or be deleted (it stops first). An object whose live owner is
// not the one hashing says gets a handover request instead, so that the
// owner lets go before the next one starts. Without live members nothing
// moves.
func Place(uid string, p Placement, live []string) (Move, bool) {
	want := Owner(uid, live)
	switch {
	case want == "":
		return Move{}, false
	case !slices.Contains(live, p.Owner):
		return Move{Owner: want}, true
	case want == p.Owner && p.Next != "":
		return Move{ClearNext: true}, true // the ring changed back
	case want != p.Owner && p.Next != want:
		return Move{Next: want}, true
	}
	return Move{}, false
}
