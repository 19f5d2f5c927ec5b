package sharding

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPlace(t *testing.T) {
	const uid = "8a1f0c52-3b7e-4d6a-9f21-0c4e5d6f7a8b"
	live := []string{"member-a", "member-b", "member-c"}
	hashed := Owner(uid, live)
	other := "member-a"
	if other == hashed {
		other = "member-b"
	}
	tests := []struct {
		name  string
		p     Placement
		live  []string
		want  Move
		write bool
	}{
		{"a new object gets its owner at once", Placement{}, live, Move{Owner: hashed}, true},
		{"an object of a dead member gets its owner at once", Placement{Owner: "member-gone"}, live, Move{Owner: hashed}, true},
		{"a dead member's object gets its owner at once, its handover request dropped",
			Placement{Owner: "member-gone", Next: other}, live, Move{Owner: hashed}, true},
		{"an object where it belongs stays", Placement{Owner: hashed}, live, Move{}, false},
		{"an object of a live member that should move gets a handover request", Placement{Owner: other}, live, Move{Next: hashed}, true},
		{"a requested handover is not requested again", Placement{Owner: other, Next: hashed}, live, Move{}, false},
		{"a handover to a member that has gone is redirected", Placement{Owner: other, Next: "member-gone"}, live, Move{Next: hashed}, true},
		{"a handover no longer wanted is called off", Placement{Owner: hashed, Next: other}, live, Move{ClearNext: true}, true},
		{"without live members nothing moves", Placement{Owner: "member-gone"}, nil, Move{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, write := Place(uid, tt.p, tt.live)
			if write != tt.write {
				t.Errorf("Place() writes = %v, want %v", write, tt.write)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Place() -want +got:\n%s", diff)
			}
		})
	}
}
