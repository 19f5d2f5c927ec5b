package ring

import (
	"testing"
	"time"

	"github.com/kopf-go/kopf/internal/sharding"
)

// The sweep's watches go on through a new round whose selector is the
// same, a retirement (it moves a name from the epoch's members to its
// retired ones), and list again only sweepAfterTakeover later: listed at
// once, each would begin with a pass over every object of its kind while
// the adopters start the retired member's objects. A join changes the
// selector, and the end of a doubt about unseen members asks for the
// objects it left unplaced: both list again at once.
func TestSweepListsAgainLaterAfterARetirement(t *testing.T) {
	k := KeysOf("ops", "main")
	tm := &term{a: &Assigner{keys: k}, round: 1, epoch: sharding.Epoch{Members: []string{"m-a", "m-b", "m-c"}}}
	sel, err := k.Unowned([]string{"m-a", "m-b", "m-c"})
	if err != nil {
		t.Fatal(err)
	}
	names := map[listing]string{listedAlready: "listed already", listNow: "list now", listLater: "list later"}
	check := func(what string, want listing) {
		t.Helper()
		if got := tm.nextListing(1, sel.String()); got != want {
			t.Errorf("%s: %s, want %s", what, names[got], names[want])
		}
	}
	check("the round the watches select", listedAlready)
	tm.epoch = sharding.Epoch{Members: []string{"m-a", "m-b"}, Retired: map[string]int64{"m-c": 2}}
	tm.round = 3
	check("a retirement", listLater)
	tm.relist = true
	check("a retirement as a doubt ended", listNow)
	tm.relist = false
	tm.epoch = sharding.Epoch{Members: []string{"m-a", "m-b", "m-d"}, Retired: map[string]int64{"m-c": 2}}
	tm.round = 5
	check("a join", listNow)
}

// A new assigner's first sweep waits sweepAfterTakeover if its first
// count retired a member (the assigner that died), and not at all if it
// retired nobody (a ring's first start, a handover of the election).
func TestFirstSweepWaitsOnlyAfterATakeover(t *testing.T) {
	before := sharding.Epoch{Serial: 4, Members: []string{"m-a", "m-b", "m-c"}, Retired: map[string]int64{"m-x": 2}}
	for _, tt := range []struct {
		name  string
		after sharding.Epoch
		want  time.Duration
	}{
		{"nobody retired", before, 0},
		{"a member joined", sharding.Epoch{Serial: 5, Members: []string{"m-a", "m-b", "m-c", "m-d"}, Retired: map[string]int64{"m-x": 2}}, 0},
		{"a retired member dropped", sharding.Epoch{Serial: 5, Members: []string{"m-a", "m-b", "m-c"}}, 0},
		{"the assigner retired", sharding.Epoch{Serial: 5, Members: []string{"m-b", "m-c"}, Retired: map[string]int64{"m-x": 2, "m-a": 5}}, sweepAfterTakeover},
	} {
		tm := &term{epoch: tt.after}
		if got := tm.firstSweepAfter(before); got != tt.want {
			t.Errorf("%s: the first sweep waits %s, want %s", tt.name, got, tt.want)
		}
	}
}
