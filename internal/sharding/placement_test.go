package sharding

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPlace(t *testing.T) {
	key := ObjectKey("default", "object-1")
	live := []string{"member-a", "member-b", "member-c"}
	hashed := Owner(key, live)
	other := "member-a"
	if other == hashed {
		other = "member-b"
	}
	withoutHashed := slices.DeleteFunc(slices.Clone(live), func(m string) bool { return m == hashed })
	owned := func(m string) Placement { return Placement{Owner: m, Granted: m} }
	doubtful := func(m string) bool { return m == "member-unseen" }
	tests := []struct {
		name    string
		p       Placement
		live    []string
		want    Move
		write   bool
		placing []string // nil: all of live
	}{
		{"an object of a member the assigner never saw, while it is in doubt, waits", owned("member-unseen"), live, Move{}, false, nil},
		{"a label edited away from a member in doubt waits too", Placement{Owner: other, Granted: "member-unseen"}, live, Move{}, false, nil},
		{"a new object gets its owner at once", Placement{}, live, Move{Owner: hashed}, true, nil},
		{"an object of a dead member gets its owner at once", owned("member-gone"), live, Move{Owner: hashed}, true, nil},
		{"an object where it belongs stays", owned(hashed), live, Move{}, false, nil},
		{"an object of a live member that should move stays: the member hands it over itself", owned(other), live, Move{}, false, nil},
		{"without live members nothing moves", owned("member-gone"), nil, Move{}, false, nil},

		// Labels edited by hand: the grant says who may be working on it.
		{"a label edited away from a live granted member is put back",
			Placement{Owner: other, Granted: hashed}, live, Move{Owner: hashed}, true, nil},
		{"a label edited away from a live granted member that should move is put back to it",
			Placement{Owner: hashed, Granted: other}, live, Move{Owner: other}, true, nil},
		{"a label removed from a live granted member is put back", Placement{Granted: hashed}, live, Move{Owner: hashed}, true, nil},
		{"a label edited away from a dead granted member: the object gets its owner at once",
			Placement{Owner: other, Granted: "member-gone"}, live, Move{Owner: hashed}, true, nil},
		{"a label without a grant (set by hand on a new object): the object gets its owner at once",
			Placement{Owner: other}, live, Move{Owner: hashed}, true, nil},

		// Adopted objects: their retired member's name stays on them.
		{"an object of a retired member stays: its adopter works on it", owned("member-retired"), live, Move{}, false, nil},
		{"a label edited away from a retired granted member is put back to it",
			Placement{Owner: other, Granted: "member-retired"}, live, Move{Owner: "member-retired"}, true, nil},

		// A member that stops is live (what it holds stays) but takes
		// nothing new.
		{"a new object goes to a member that does not stop", Placement{}, live, Move{Owner: Owner(key, withoutHashed)}, true, withoutHashed},
		{"an object of a dead member goes to a member that does not stop",
			owned("member-gone"), live, Move{Owner: Owner(key, withoutHashed)}, true, withoutHashed},
		{"an object granted to a member that stops stays with it", owned(hashed), live, Move{}, false, withoutHashed},
		{"a label edited away from a member that stops is put back to it",
			Placement{Owner: other, Granted: hashed}, live, Move{Owner: hashed}, true, withoutHashed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			placing := tt.placing
			if placing == nil {
				placing = tt.live
			}
			got, write := Place(key, tt.p, tt.live, placing, doubtful, func(m string) bool { return m == "member-retired" })
			if write != tt.write {
				t.Errorf("Place() writes = %v, want %v", write, tt.write)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Place() -want +got:\n%s", diff)
			}
		})
	}
}

func TestHandled(t *testing.T) {
	tests := []struct {
		name   string
		p      Placement
		member string
		want   bool
	}{
		{"label and grant name the member", Placement{Owner: "a", Granted: "a"}, "a", true},
		{"a label edited by hand to the member", Placement{Owner: "b", Granted: "a"}, "b", false},
		{"the granted member whose label was edited away", Placement{Owner: "b", Granted: "a"}, "a", false},
		{"a label without a grant", Placement{Owner: "a"}, "a", false},
		{"nothing", Placement{}, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.p.Handled(tt.member); got != tt.want {
				t.Errorf("%+v.Handled(%q) = %v, want %v", tt.p, tt.member, got, tt.want)
			}
		})
	}
}

func TestStray(t *testing.T) {
	members := []string{"member-a", "member-b", "member-c"}
	key := ObjectKey("default", "object-1")
	hashed := Owner(key, members)
	if next, ok := Stray(key, hashed, members); ok {
		t.Errorf("the member the object hashes to hands it over to %q", next)
	}
	other := "member-a"
	if other == hashed {
		other = "member-b"
	}
	if next, ok := Stray(key, other, members); !ok || next != hashed {
		t.Errorf("Stray(%q) = %q, %v; want %q, true", other, next, ok, hashed)
	}
	if next, ok := Stray(key, "member-unlisted", members); !ok || next != hashed {
		t.Errorf("a member not published hands over to %q, %v; want %q", next, ok, hashed)
	}
	if _, ok := Stray(key, other, nil); ok {
		t.Error("without published members an object strays")
	}
}
