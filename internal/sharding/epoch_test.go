package sharding

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestEpochNextRetiresTheDepartedAndAdoptsAmongThoseThatHadJoined(t *testing.T) {
	e0 := Epoch{}
	e1, unchanged := e0.Next([]string{"b", "a", "c"}, nil, nil, nil)
	if unchanged {
		t.Fatal("the first members changed nothing")
	}
	if diff := cmp.Diff(Epoch{Serial: 1, Members: []string{"a", "b", "c"},
		Joined: map[string]int64{"a": 1, "b": 1, "c": 1}, Retired: map[string]int64{}}, e1); diff != "" {
		t.Fatalf("the first epoch -want +got:\n%s", diff)
	}
	if again, unchanged := e1.Next([]string{"a", "b", "c"}, nil, nil, nil); !unchanged || again.Serial != 1 {
		t.Errorf("the same members made a new epoch: %+v", again)
	}

	// c dies: its objects are adopted by a and b.
	e2, _ := e1.Next([]string{"a", "b"}, nil, nil, nil)
	if diff := cmp.Diff(map[string]int64{"c": 2}, e2.Retired); diff != "" {
		t.Errorf("retired -want +got:\n%s", diff)
	}
	if diff := cmp.Diff([]string{"a", "b"}, e2.Adopters("c")); diff != "" {
		t.Errorf("adopters of c -want +got:\n%s", diff)
	}

	// d joins: it adopts nothing of c's, and a and b keep theirs.
	e3, _ := e2.Next([]string{"a", "b", "d"}, nil, nil, nil)
	if diff := cmp.Diff([]string{"a", "b"}, e3.Adopters("c")); diff != "" {
		t.Errorf("adopters of c after a join -want +got:\n%s", diff)
	}
	for i := range 200 {
		key := ObjectKey("ns", fmt.Sprint("o-", i))
		if e3.Adopter(key, "c") != e2.Adopter(key, "c") {
			t.Fatalf("%s changed its adopter at a join: %q, then %q", key, e2.Adopter(key, "c"), e3.Adopter(key, "c"))
		}
	}

	// a dies: c's objects adopted by a go to b only; a is retired too.
	e4, _ := e3.Next([]string{"b", "d"}, nil, nil, nil)
	if diff := cmp.Diff([]string{"b"}, e4.Adopters("c")); diff != "" {
		t.Errorf("adopters of c after a's death -want +got:\n%s", diff)
	}
	if !e4.IsRetired("a") || e4.Retired["a"] != e4.Serial {
		t.Errorf("a is not retired at serial %d: %v", e4.Serial, e4.Retired)
	}
	if diff := cmp.Diff([]string{"b", "d"}, e4.Adopters("a")); diff != "" {
		t.Errorf("adopters of a -want +got:\n%s", diff)
	}

	// b dies: no adopter of c's is left, so c is retired again among d.
	e5, _ := e4.Next([]string{"d"}, nil, nil, nil)
	if diff := cmp.Diff([]string{"d"}, e5.Adopters("c")); diff != "" {
		t.Errorf("adopters of c once all its adopters died -want +got:\n%s", diff)
	}
	if e5.Retired["c"] != e5.Serial {
		t.Errorf("c was not retired again: %v", e5.Retired)
	}

	// c's objects all carry other names now: c is dropped.
	e6, _ := e5.Next([]string{"d"}, nil, []string{"c"}, nil)
	if e6.IsRetired("c") || !e6.IsRetired("a") || !e6.IsRetired("b") {
		t.Errorf("retired after c is gone: %v", e6.Retired)
	}

	// A new assigner whose view of the Leases is stale counts a and b
	// live again: they stay retired, with their adopters.
	e7, unchanged := e6.Next([]string{"a", "b", "d"}, nil, nil, nil)
	if !unchanged || e7.Serial != e6.Serial {
		t.Errorf("retired members counted live made a new epoch: %+v, was %+v", e7, e6)
	}
	if !e7.IsRetired("a") || !e7.IsRetired("b") || slices.Contains(e7.Members, "a") || e7.Retired["a"] != e6.Retired["a"] {
		t.Errorf("a retired member came back: members %v, retired %v", e7.Members, e7.Retired)
	}
}

func TestEpochWithoutMembersAdoptsNothing(t *testing.T) {
	e1, _ := Epoch{}.Next([]string{"a"}, nil, nil, nil)
	e2, _ := e1.Next(nil, nil, nil, nil)
	if !e2.IsRetired("a") {
		t.Fatalf("a is not retired: %v", e2.Retired)
	}
	if got := e2.Adopter(ObjectKey("ns", "o"), "a"); got != "" {
		t.Errorf("an object of a was adopted by %q without members", got)
	}
	if got := e2.Adopter(ObjectKey("ns", "o"), "never"); got != "" {
		t.Errorf("an object of a member never retired was adopted by %q", got)
	}
}

// Each adopter's buckets are the complement of what AdoptedElsewhere
// names for it, every bucket has one adopter, an object's adopter is its
// bucket's, and a bucket moves only when its adopter dies.
func TestEpochAdoptsByBucket(t *testing.T) {
	e1, _ := Epoch{}.Next([]string{"a", "b", "c", "d"}, nil, nil, nil)
	e2, _ := e1.Next([]string{"a", "b", "c"}, nil, nil, nil) // d retired among a, b, c
	owners := map[string]int{}
	for _, m := range []string{"a", "b", "c"} {
		elsewhere := e2.AdoptedElsewhere("d", m)
		mine := Buckets - len(elsewhere)
		if mine < Buckets/6 || mine > Buckets/2 {
			t.Errorf("%s adopts %d of %d buckets", m, mine, Buckets)
		}
		for _, b := range AllBuckets() {
			if !slices.Contains(elsewhere, b) {
				owners[b]++
			}
		}
	}
	for _, b := range AllBuckets() {
		if owners[b] != 1 {
			t.Fatalf("bucket %s has %d adopters", b, owners[b])
		}
	}
	for i := range 300 {
		key := ObjectKey("ns", fmt.Sprint("o-", i))
		adopter := e2.Adopter(key, "d")
		if slices.Contains(e2.AdoptedElsewhere("d", adopter), key) {
			t.Fatalf("bucket %s is adopted by %s, whose selector leaves it out", key, adopter)
		}
	}
	e3, _ := e2.Next([]string{"a", "b"}, nil, nil, nil) // c, an adopter, dies
	for _, b := range AllBuckets() {
		if was := Owner(b, e2.Adopters("d")); was != "c" && Owner(b, e3.Adopters("d")) != was {
			t.Errorf("bucket %s moved from %s, which lives", b, was)
		}
	}
	if got := e3.AdoptedElsewhere("d", "c"); got != nil {
		t.Errorf("a member that adopts nothing any more is given buckets elsewhere: %v", got)
	}
	only, _ := Epoch{}.Next([]string{"a", "b"}, nil, nil, nil)
	only, _ = only.Next([]string{"a"}, nil, nil, nil)
	if got := only.AdoptedElsewhere("b", "a"); len(got) != 0 {
		t.Errorf("the only adopter leaves buckets out: %v", got)
	}
}

func TestBucket(t *testing.T) {
	if ObjectKey("ns", "o") != ObjectKey("ns", "o") {
		t.Fatal("a key's bucket changes")
	}
	counts := map[string]int{}
	for i := range 102400 {
		b := ObjectKey("ns", fmt.Sprint("obj-", i))
		if !ValidBucket(b) {
			t.Fatalf("bucket %q is not valid", b)
		}
		counts[b]++
	}
	if len(counts) != Buckets {
		t.Errorf("102400 keys fell into %d buckets of %d", len(counts), Buckets)
	}
	for _, v := range []string{"", "-1", "1024", "01", "x", "1.0"} {
		if ValidBucket(v) {
			t.Errorf("%q is a valid bucket", v)
		}
	}
}

// A member stands by for the buckets it adopts when their owner dies:
// after the death of any member, each adopter's buckets of it are among
// those it stood by for, and no bucket has two members standing by.
func TestEpochStandsByForWhatADeathWouldGive(t *testing.T) {
	members := []string{"a", "b", "c", "d"}
	e, _ := Epoch{}.Next(members, nil, nil, nil)
	standing := map[string]string{}
	for _, m := range members {
		buckets := e.Standby(m)
		if len(buckets) < Buckets/8 || len(buckets) > Buckets/2 {
			t.Errorf("%s stands by for %d of %d buckets", m, len(buckets), Buckets)
		}
		for _, b := range buckets {
			if Owner(b, members) == m {
				t.Errorf("%s stands by for bucket %s, which it owns", m, b)
			}
			if other, ok := standing[b]; ok {
				t.Fatalf("bucket %s has two members standing by: %s and %s", b, other, m)
			}
			standing[b] = m
		}
	}
	if len(standing) != Buckets {
		t.Errorf("%d of %d buckets have a member standing by", len(standing), Buckets)
	}
	for _, dead := range members {
		var live []string
		for _, m := range members {
			if m != dead {
				live = append(live, m)
			}
		}
		next, _ := e.Next(live, nil, nil, nil)
		for _, b := range AllBuckets() {
			if Owner(b, members) != dead {
				continue
			}
			adopter := next.Adopter(b, dead)
			if !slices.Contains(e.Standby(adopter), b) {
				t.Errorf("%s's bucket %s is adopted by %s, which did not stand by for it", dead, b, adopter)
			}
		}
	}
	alone, _ := Epoch{}.Next([]string{"a"}, nil, nil, nil)
	if got := alone.Standby("a"); got != nil {
		t.Errorf("the only member stands by for %d buckets", len(got))
	}
	if got := e.Standby("z"); got != nil {
		t.Errorf("a non-member stands by for %d buckets", len(got))
	}
}

// A retirement is orphaned when no adopter was a member before it: the
// ring had nobody live. A death among established members, and a second
// retirement among them of a member whose adopters died, are not.
func TestEpochOrphanedRetirements(t *testing.T) {
	e1, _ := Epoch{}.Next([]string{"a", "b"}, nil, nil, nil)
	died, _ := e1.Next([]string{"a"}, nil, nil, nil)
	if died.Orphaned("b") {
		t.Error("a death among established members is orphaned")
	}
	empty, _ := e1.Next([]string{"c"}, nil, nil, nil) // a and b gone, c new
	for _, m := range []string{"a", "b"} {
		if !empty.IsRetired(m) || !empty.Orphaned(m) {
			t.Errorf("%s, retired when only a new member was live: retired %v, orphaned %v, want both", m, empty.IsRetired(m), empty.Orphaned(m))
		}
	}
	e3, _ := Epoch{}.Next([]string{"a", "b", "c"}, nil, nil, nil)
	e4, _ := e3.Next([]string{"a", "b"}, nil, nil, nil) // c retired among a, b
	e5, _ := e4.Next([]string{"a"}, nil, nil, nil)      // b dies; c's objects stay with a, if they were b's
	if e5.Orphaned("c") || e5.Orphaned("b") {
		t.Error("a retirement among an established member is orphaned")
	}
	if e5.Orphaned("a") {
		t.Error("a live member is orphaned")
	}
}

func TestEpochStoppingMembersTakeNothingNewAndKeepWhatTheyHold(t *testing.T) {
	e1, _ := Epoch{}.Next([]string{"a", "b", "c"}, nil, nil, nil)
	e2, _ := e1.Next([]string{"a", "b"}, nil, nil, nil) // c retired among a, b
	stopping, unchanged := e2.Next([]string{"a", "b"}, []string{"b"}, nil, nil)
	if unchanged || stopping.Serial != e2.Serial+1 {
		t.Fatalf("a member that began to stop made no new epoch: %+v", stopping)
	}
	if !slices.Equal(stopping.Members, []string{"a", "b"}) || stopping.IsRetired("b") || !slices.Equal(stopping.Stopping, []string{"b"}) {
		t.Errorf("a stopping member is a member, not retired: %+v", stopping)
	}
	if got := stopping.Placing(); !slices.Equal(got, []string{"a"}) {
		t.Errorf("Placing() = %v, want [a]", got)
	}
	// Only what hashed to b goes elsewhere.
	for i := range 2000 {
		key := ObjectKey("ns", fmt.Sprint("object-", i))
		before, after := Owner(key, stopping.Members), Owner(key, stopping.Placing())
		if before != "b" && after != before {
			t.Fatalf("%s moved from %s to %s though it did not hash to the stopping member", key, before, after)
		}
	}
	// What b adopted stays b's while it stops: it may still be working on it.
	if !slices.Equal(stopping.Adopters("c"), e2.Adopters("c")) {
		t.Errorf("adopters of c changed when b began to stop: %v, were %v", stopping.Adopters("c"), e2.Adopters("c"))
	}
	// b adopts from no later death, so it stands by for nothing, and a
	// stands by for b's buckets as well as its own.
	if got := stopping.Standby("b"); got != nil {
		t.Errorf("a stopped member stands by for %d buckets", len(got))
	}
	var bs []string
	for _, bucket := range AllBuckets() {
		if Owner(bucket, stopping.Members) == "b" {
			bs = append(bs, bucket)
		}
	}
	if got := stopping.Standby("a"); !slices.Equal(got, bs) {
		t.Errorf("the one member that goes on stands by for %d buckets, want b's %d", len(got), len(bs))
	}

	// The same stop again changes nothing; the end of it does.
	if again, unchanged := stopping.Next([]string{"a", "b"}, []string{"b"}, nil, nil); !unchanged || again.Serial != stopping.Serial {
		t.Errorf("the same stop made a new epoch: %+v", again)
	}
	gone, _ := stopping.Next([]string{"a"}, nil, nil, nil)
	if len(gone.Stopping) != 0 || !gone.IsRetired("b") || !slices.Equal(gone.Placing(), []string{"a"}) {
		t.Errorf("after b left: %+v", gone)
	}
	// A name that is not a member is not stopping.
	if odd, _ := e2.Next([]string{"a", "b"}, []string{"z"}, nil, nil); len(odd.Stopping) != 0 {
		t.Errorf("a stopping name that is no member: %v", odd.Stopping)
	}
	// A ring that stops whole places where it can.
	all, _ := e2.Next([]string{"a", "b"}, []string{"a", "b"}, nil, nil)
	if !slices.Equal(all.Placing(), []string{"a", "b"}) {
		t.Errorf("every member stops: Placing() = %v, want all of them", all.Placing())
	}
}

// The case that chaos run 12 met: a member stops, then another adopter of
// the same retired member dies; the stopped member's workers have
// stopped, so it must gain none of the dead adopter's buckets.
func TestAStoppedMemberGainsNoBucketWhenAnotherAdopterDies(t *testing.T) {
	e1, _ := Epoch{}.Next([]string{"a", "b", "c", "r"}, nil, nil, nil)
	e2, _ := e1.Next([]string{"a", "b", "c"}, nil, nil, nil) // r retired among a, b, c
	e3, _ := e2.Next([]string{"a", "b", "c"}, []string{"b"}, nil, nil)
	if e3.Stopped["b"] != e3.Serial {
		t.Fatalf("b's stop is not recorded at serial %d: %v", e3.Serial, e3.Stopped)
	}
	e4, _ := e3.Next([]string{"b", "c"}, []string{"b"}, nil, nil) // a dies while b stops

	var kept, gained int
	for _, bucket := range AllBuckets() {
		before, after := e2.Adopter(bucket, "r"), e4.Adopter(bucket, "r")
		switch {
		case before == "b" && after != "b":
			t.Fatalf("bucket %s moved from the stopped b to %s", bucket, after)
		case before == "b":
			kept++
		case after == "b":
			t.Fatalf("bucket %s of r went to the stopped b when %s died", bucket, before)
		case before == "c" && after != "c":
			t.Fatalf("bucket %s moved from the live c to %s", bucket, after)
		case before == "a":
			gained++
		}
	}
	if kept == 0 || gained == 0 {
		t.Fatalf("the case is not met: b kept %d buckets, a's %d went elsewhere", kept, gained)
	}
	// a's own objects, retired after b's stop, are adopted by c alone.
	if !e4.Adopts("a", "c") || e4.Adopts("a", "b") || e4.AdoptedElsewhere("a", "c") != nil {
		t.Errorf("a's objects: c adopts %v (elsewhere %v), b adopts %v", e4.Adopts("a", "c"), e4.AdoptedElsewhere("a", "c"), e4.Adopts("a", "b"))
	}

	// A ring with a member of a version before the record adopts as it
	// does: the stop is not recorded, and b gains a's buckets there too.
	old, _ := e2.Next([]string{"a", "b", "c"}, []string{"b"}, nil, []string{"c"})
	if old.Stopped != nil || old.Held != nil {
		t.Errorf("a stop recorded beside a member that does not follow the rule: %v %v", old.Stopped, old.Held)
	}

	// b's replica restarts under its Lease and stops stopping: it takes
	// new objects again, but nothing of what went elsewhere comes back.
	e5, _ := e4.Next([]string{"b", "c"}, nil, nil, nil)
	if _, ok := e5.Stopped["b"]; !ok || !slices.Equal(e5.Placing(), []string{"b", "c"}) {
		t.Fatalf("after b's restart: stopped %v, placing %v", e5.Stopped, e5.Placing())
	}
	for _, bucket := range AllBuckets() {
		if e5.Adopter(bucket, "r") != e4.Adopter(bucket, "r") {
			t.Fatalf("bucket %s of r moved at b's restart", bucket)
		}
	}
	// Once r and a are gone (every object claimed), dropping the record
	// moves nothing, and it goes.
	e6, _ := e5.Next([]string{"b", "c"}, nil, []string{"r", "a"}, nil)
	if e6.Stopped != nil || e6.Held != nil || len(e6.Retired) != 0 {
		t.Errorf("the record of a stop that moves nothing stays: %+v", e6)
	}
}

// Random histories of joins, deaths, stops and restarts: whatever
// happens, a retired member's bucket changes its adopter only when its
// adopter leaves, never goes to a member that stops while an adopter
// whose stop is not recorded is live, and always has an adopter while a
// member that had joined by the retirement is live.
func TestEpochAdoptersMoveOnlyWhenTheirAdopterLeaves(t *testing.T) {
	for seed := range int64(100) {
		rng := rand.New(rand.NewSource(seed))
		var live, stopping []string
		next := 0
		join := func() {
			live = append(live, fmt.Sprint("m", next))
			next++
		}
		for range 4 {
			join()
		}
		e, _ := Epoch{}.Next(live, nil, nil, nil)
		for step := range 30 {
			switch op := rng.Intn(10); {
			case op < 3 && len(live) > 1: // a death
				i := rng.Intn(len(live))
				stopping = slices.DeleteFunc(stopping, func(m string) bool { return m == live[i] })
				live = slices.Delete(live, i, i+1)
			case op < 6: // a stop begins
				m := live[rng.Intn(len(live))]
				if !slices.Contains(stopping, m) {
					stopping = append(stopping, m)
				}
			case op < 7 && len(stopping) > 0: // a restart under its Lease
				stopping = slices.Delete(stopping, 0, 1)
			case op < 8 && len(e.Retired) > 0: // every object of a retired member claimed
				gone := e.RetiredNames()[rng.Intn(len(e.Retired))]
				was := e
				e, _ = e.Next(live, stopping, []string{gone}, nil)
				checkAdoptersMoved(t, seed, step, was, e)
				continue
			default:
				join()
			}
			was := e
			e, _ = e.Next(live, stopping, nil, nil)
			checkAdoptersMoved(t, seed, step, was, e)
		}
	}
}

func checkAdoptersMoved(t *testing.T, seed int64, step int, was, e Epoch) {
	t.Helper()
	for r, at := range e.Retired {
		if was.Retired[r] != at {
			continue // a new retirement, or one retired again: new adopters
		}
		for _, bucket := range AllBuckets() {
			before, after := was.Adopter(bucket, r), e.Adopter(bucket, r)
			if after == "" && len(e.Adopters(r)) > 0 {
				t.Fatalf("seed %d step %d: bucket %s of %s has no adopter among %v", seed, step, bucket, r, e.Adopters(r))
			}
			if before == after {
				continue
			}
			if slices.Contains(e.Members, before) {
				t.Fatalf("seed %d step %d: bucket %s of %s moved from the live %s to %s\nwas %+v\nis  %+v", seed, step, bucket, r, before, after, was, e)
			}
			if slices.Contains(e.Stopping, after) && slices.ContainsFunc(e.Adopters(r), func(m string) bool {
				_, recorded := e.Stopped[m]
				return !recorded
			}) {
				t.Fatalf("seed %d step %d: bucket %s of %s went from %s to %s, which stops\nwas %+v\nis  %+v", seed, step, bucket, r, before, after, was, e)
			}
		}
	}
}

// The version written before a retirement is recorded for the members
// that an epoch retires anew, carried while they stay retired, and
// recorded again for a member retired again.
func TestEpochCarriesTheVersionWrittenBeforeEachRetirement(t *testing.T) {
	e1, _ := Epoch{}.Next([]string{"a", "b", "c"}, nil, nil, nil)
	e2, _ := e1.Next([]string{"a", "b"}, nil, nil, nil)
	e2.RecordWrittenBefore(e1, "100")
	e2.RecordWrittenBefore(e1, "") // an assigner that has not followed the Leases for a margin
	if diff := cmp.Diff(map[string]string{"c": "100"}, e2.WrittenBefore); diff != "" {
		t.Fatalf("after c's retirement -want +got:\n%s", diff)
	}
	e3, _ := e2.Next([]string{"b"}, nil, nil, nil) // a dies
	e3.RecordWrittenBefore(e2, "200")
	if diff := cmp.Diff(map[string]string{"a": "200", "c": "100"}, e3.WrittenBefore); diff != "" {
		t.Errorf("after a's retirement -want +got:\n%s", diff)
	}
	e4, _ := e3.Next([]string{"d"}, nil, nil, nil) // b dies: c and a are retired again among d
	e4.RecordWrittenBefore(e3, "300")
	if diff := cmp.Diff(map[string]string{"a": "300", "b": "300", "c": "300"}, e4.WrittenBefore); diff != "" {
		t.Errorf("after every adopter died -want +got:\n%s", diff)
	}
	e5, _ := e4.Next([]string{"d"}, nil, []string{"a"}, nil)
	if _, ok := e5.WrittenBefore["a"]; ok || e5.WrittenBefore["c"] != "300" {
		t.Errorf("after a was dropped: %v", e5.WrittenBefore)
	}
}

func TestCandidatesAreTheAssignerAndTheOldestMembersThatDoNotStop(t *testing.T) {
	e := Epoch{Members: []string{"a", "b", "c", "d", "e"}, Joined: map[string]int64{"a": 4, "b": 1, "c": 1, "d": 2, "e": 3}}
	if got, want := e.Candidates(3), []string{"b", "c", "d"}; !slices.Equal(got, want) {
		t.Errorf("candidates = %v, want the three that joined first, ties by name: %v", got, want)
	}
	e.Stopping = []string{"c"}
	if got, want := e.Candidates(3), []string{"b", "d", "e"}; !slices.Equal(got, want) {
		t.Errorf("with c stopping, candidates = %v, want %v", got, want)
	}
	e.Stopping = []string{"a", "b", "c", "d"}
	if got, want := e.Candidates(3), []string{"b", "c", "e"}; !slices.Equal(got, want) {
		t.Errorf("with all but e stopping, candidates = %v, want e and the oldest stopping ones: %v", got, want)
	}
	e.Members = append(e.Members, "f") // joined later than all
	e.Joined["f"] = 9
	e.Stopping = nil
	if got, want := e.Candidates(3), []string{"b", "c", "d"}; !slices.Equal(got, want) {
		t.Errorf("after a join, candidates = %v, want them unchanged: %v", got, want)
	}
	e.Assigner = "f"
	if got, want := e.Candidates(3), []string{"b", "c", "f"}; !slices.Equal(got, want) {
		t.Errorf("with f the assigner, candidates = %v, want f and the two oldest others: %v", got, want)
	}
	e.Assigner = "gone"
	if got, want := e.Candidates(3), []string{"b", "c", "d"}; !slices.Equal(got, want) {
		t.Errorf("with an assigner that is no member, candidates = %v, want the three oldest: %v", got, want)
	}
	if got := e.Candidates(10); len(got) != 6 {
		t.Errorf("a ring smaller than k: candidates = %v, want every member", got)
	}
	if got := (Epoch{}).Candidates(3); len(got) != 0 {
		t.Errorf("an epoch without members has candidates %v", got)
	}
}
