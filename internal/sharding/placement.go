package sharding

import "slices"

// Placement is where an object stands in its ring, as its labels and
// annotations say. Owner is the owner label, which selects the object into
// a member's cache. Granted is the member that was last given the object
// by someone entitled to (the assigner, or the previous owner's handover);
// a member handles an object only while both name it.
type Placement struct {
	Owner, Granted string
}

// Handled reports whether member may work on the object: the owner label
// and the grant both name it. An owner label edited by hand names a member
// that was granted nothing, and that member must not start before the
// granted one has stopped.
func (p Placement) Handled(member string) bool {
	return member != "" && p.Owner == member && p.Granted == member
}

// Move is what the assigner writes to an object: the owner label and the
// grant are set to Owner. It writes one only to objects that no live
// member may be working on, or to put a hand-edited owner label back to
// the live member the object is granted to. Objects that a live member
// holds and that hash elsewhere are handed over by that member itself
// (docs/sharding.md, "Handover").
type Move struct {
	Owner string
}

// ObjectKey is what an object is hashed by over the members: its bucket,
// a hash of its namespace and name (Bucket). The name is known to an
// admission webhook before the object has a uid, and an object recreated
// under its name keeps it, so that it comes to the member its predecessor
// was with. Members own whole buckets, so that a dead member's adopters
// can select their own part of its objects by the bucket label, and each
// adopted object is its adopter's for good (docs/sharding.md,
// "Assignment" and "Adoption").
func ObjectKey(namespace, name string) string { return Bucket(namespace + "/" + name) }

// Place decides the assigner's write for one object with the given key
// (ObjectKey), given the live members (sorted or not), those of them that
// take new objects (placing: the ones that do not stop, Placing), and
// which members that are not live may still be working (doubtful; nil:
// none); false: nothing to write.
//
// The grant, not the owner label, tells who may be working on the object:
// only the assigner and a handing-over owner write it, while a label can
// be edited by anyone. An object granted to nobody live (new, or its
// member's Lease released, or expired and confirmed so) gets its owner at
// once: nobody works on it. One granted to a member that is not live but
// may still be working (a new assigner's doubt about a member it never
// saw) waits. An object granted to a live member stays with that member:
// if the label was changed under it, the label is put back, and the
// member hands it over itself if hashing wants it elsewhere. Without live
// members nothing moves.
//
// An object granted to a retired member (adopted, whose name the epoch
// keeps) counts as granted to a live one: its adopter may be working on
// it, so only a label edited under it is put back.
func Place(key string, p Placement, live, placing []string, doubtful, adopted func(member string) bool) (Move, bool) {
	want := Owner(key, placing)
	granted := slices.Contains(live, p.Granted) || p.Granted != "" && adopted != nil && adopted(p.Granted)
	switch {
	case want == "":
		return Move{}, false
	case !granted && p.Granted != "" && doubtful != nil && doubtful(p.Granted):
		return Move{}, false
	case !granted:
		return Move{Owner: want}, true
	case p.Owner != p.Granted:
		return Move{Owner: p.Granted}, true
	}
	return Move{}, false
}

// Stray reports whether the member that holds the object with the given
// key should hand it over, and to whom: the published members hash it to
// another one. Without published members nothing strays.
func Stray(key, member string, members []string) (string, bool) {
	want := Owner(key, members)
	return want, want != "" && want != member
}
