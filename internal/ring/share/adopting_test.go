package share

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kopf-go/kopf/internal/ownership"
	"github.com/kopf-go/kopf/internal/ring"
	"github.com/kopf-go/kopf/internal/sharding"
)

// A member stands by for the buckets it comes second to; when their
// owner dies, the standby cache holds its objects there, and the retired
// member's own selection leaves them out. For a while after a takeover
// began, no standby cache is added; then one is, for the buckets the
// member comes second to now, and when another adopter dies, the buckets
// it gives this member are held already: nothing is listed again.
func TestRingShareAdoptsFromTheStandbyCaches(t *testing.T) {
	fc := clocktesting.NewFakeClock(shareT0)
	r := joinedShare(t, fc)
	me := r.member.Name()
	four := []string{me, "m-b", "m-c", "m-r"}
	three := []string{me, "m-b", "m-c"}
	two := []string{me, "m-b"}
	joined := map[string]int64{me: 1, "m-b": 1, "m-c": 1, "m-r": 1}
	in := func(sel labels.Selector, owner, bucket string) bool {
		set := labels.Set{mainKeys.Owner: owner}
		if bucket != "" {
			set[mainKeys.Bucket] = bucket
		}
		return sel.Matches(set)
	}
	r.epoch.set(sharding.Epoch{Serial: 1, Members: four, Joined: joined})
	first, _ := r.Adopting()
	if len(first) != 1 || len(first[ownership.Standby]) != 1 {
		t.Fatalf("Adopting() before any death = %v, want one standby selection alone", first)
	}
	standby := first[ownership.Standby][0]
	for _, b := range sharding.AllBuckets() {
		if want := sharding.Second(b, four) == me; in(standby, "m-x", b) != want {
			t.Fatalf("the standby selection %s: bucket %s selected %v, want %v", standby, b, !want, want)
		}
	}

	// m-r dies. The standby cache holds its buckets that this member
	// adopts; the selection of the rest of its objects waits a little.
	r.epoch.set(sharding.Epoch{Serial: 2, Members: three, Joined: map[string]int64{me: 1, "m-b": 1, "m-c": 1}, Retired: map[string]int64{"m-r": 2}})
	second, _ := r.Adopting()
	if sels, ok := second["m-r"]; !ok || len(sels) != 0 {
		t.Fatalf("at m-r's death, its selections = %v (adopted: %t), want none yet, and adopted", sels, ok)
	}
	fc.Step(remainderAfterTakeover)
	second, _ = r.Adopting()
	sels := second["m-r"]
	if len(sels) != 1 || len(second[ownership.Standby]) != 1 || second[ownership.Standby][0].String() != standby.String() {
		t.Fatalf("after a death, Adopting() = %v, want one selection of m-r's and the standby one kept alone", second)
	}
	for _, b := range sharding.AllBuckets() {
		adopter := sharding.Owner(b, three)
		held := sharding.Second(b, four) == me
		if want := adopter == me && !held; in(sels[0], "m-r", b) != want {
			t.Errorf("m-r's selection %s: bucket %s (adopter %s, held by the standby cache %v) selected %v, want %v", sels[0], b, adopter, held, !want, want)
		}
	}
	if !in(sels[0], "m-r", "") {
		t.Errorf("m-r's selection %s leaves out its objects without a bucket label", sels[0])
	}

	// The pause ends: the buckets this member comes second to among the
	// three get a standby cache, beside the one the adoption counts on.
	fc.Step(r.standbyPause() + time.Second)
	third, _ := r.Adopting()
	stand := third[ownership.Standby]
	if len(stand) != 2 || stand[0].String() != standby.String() {
		t.Fatalf("after the pause, the standby selections = %v, want the first kept and one more", stand)
	}
	for _, b := range sharding.AllBuckets() {
		if sharding.Second(b, three) == me && !in(stand[0], "m-x", b) && !in(stand[1], "m-x", b) {
			t.Errorf("bucket %s, which this member comes second to now, is in no standby selection", b)
		}
	}

	// m-c, an adopter, dies: the buckets it gives this member are held.
	r.epoch.set(sharding.Epoch{Serial: 3, Members: two, Joined: map[string]int64{me: 1, "m-b": 1}, Retired: map[string]int64{"m-r": 2, "m-c": 3}})
	fourth, _ := r.Adopting()
	if sels, ok := fourth["m-c"]; !ok || len(sels) != 0 {
		t.Fatalf("at m-c's death, its selections = %v (adopted: %t), want none yet, and adopted", sels, ok)
	}
	fc.Step(remainderAfterTakeover)
	fourth, _ = r.Adopting()
	if sels := fourth["m-r"]; len(sels) != 1 || sels[0].String() != third["m-r"][0].String() {
		t.Errorf("after an adopter's death, m-r's selections = %v, want the first kept alone", sels)
	}
	cSels := fourth["m-c"]
	if len(cSels) != 1 || !in(cSels[0], "m-c", "") {
		t.Fatalf("the dead adopter's own objects: selections %v, want one, with those without a bucket label", cSels)
	}
	for _, b := range sharding.AllBuckets() {
		if sharding.Owner(b, three) == "m-c" && sharding.Owner(b, two) == me && in(cSels[0], "m-c", b) {
			t.Errorf("m-c's selection %s lists bucket %s, which the standby cache holds", cSels[0], b)
		}
	}
	again, _ := r.Adopting()
	if diff := cmp.Diff(fmt.Sprint(fourth), fmt.Sprint(again)); diff != "" {
		t.Errorf("an unchanged epoch changed the selections -first +second:\n%s", diff)
	}

	// m-r's objects are all claimed: it is dropped, and so are its
	// selections; were it retired again, they would start anew.
	r.epoch.set(sharding.Epoch{Serial: 4, Members: two, Joined: map[string]int64{me: 1, "m-b": 1}, Retired: map[string]int64{"m-c": 3}})
	if got, _ := r.Adopting(); got["m-r"] != nil || got["m-c"] == nil {
		t.Errorf("after m-r was dropped, Adopting() = %v", got)
	}
}

// A second death within the pause after a takeover: the buckets it gives
// this member, which no running standby cache holds, get a selection of
// their own beside the retired member's first, which stays as it was.
func TestRingShareAdoptingListsWhatNoStandbyHolds(t *testing.T) {
	fc := clocktesting.NewFakeClock(shareT0)
	r := joinedShare(t, fc)
	me := r.member.Name()
	four := []string{me, "m-b", "m-c", "m-r"}
	three := []string{me, "m-b", "m-c"}
	r.epoch.set(sharding.Epoch{Serial: 1, Members: four, Joined: map[string]int64{me: 1, "m-b": 1, "m-c": 1, "m-r": 1}})
	r.Adopting()
	r.epoch.set(sharding.Epoch{Serial: 2, Members: three, Joined: map[string]int64{me: 1, "m-b": 1, "m-c": 1}, Retired: map[string]int64{"m-r": 2}})
	r.Adopting()
	fc.Step(remainderAfterTakeover) // within the standby pause
	first, _ := r.Adopting()
	unheld := ""
	for _, b := range sharding.AllBuckets() {
		// m-r's bucket, adopted by m-c, which this member did not stand by for.
		if sharding.Owner(b, four) == "m-r" && sharding.Owner(b, three) == "m-c" && sharding.Owner(b, []string{me, "m-b"}) == me &&
			sharding.Second(b, four) != me {
			unheld = b
			break
		}
	}
	if unheld == "" {
		t.Fatal("no bucket of m-r's that m-c's death gives this member is left out of its standby selection")
	}
	r.epoch.set(sharding.Epoch{Serial: 3, Members: []string{me, "m-b"}, Joined: map[string]int64{me: 1, "m-b": 1},
		Retired: map[string]int64{"m-r": 2, "m-c": 3}})
	second, _ := r.Adopting()
	sels := second["m-r"]
	if len(sels) != 2 || sels[0].String() != first["m-r"][0].String() {
		t.Fatalf("m-r's selections after an adopter's death = %v, want the first kept and one more", sels)
	}
	if !sels[1].Matches(labels.Set{mainKeys.Owner: "m-r", mainKeys.Bucket: unheld}) || sels[1].Matches(labels.Set{mainKeys.Owner: "m-r"}) {
		t.Errorf("the second selection %s does not select the gained bucket %s", sels[1], unheld)
	}
}

// The first selection of a retirement whose own buckets the standby
// caches hold (what is left: its objects without a bucket label, and
// those it was handing over) comes remainderAfterTakeover after the
// retirement, so that its watch's pass over every object does not take
// the API server from the start of the objects that those caches hold.
// A member that held none of them when the retirement came (it had just
// started) selects them at once.
func TestRingShareDefersTheRemainderOfAHeldRetirement(t *testing.T) {
	four := func(me string) []string { return []string{me, "m-b", "m-c", "m-r"} }
	three := func(me string) []string { return []string{me, "m-b", "m-c"} }
	death := func(me string) sharding.Epoch {
		return sharding.Epoch{Serial: 2, Members: three(me), Joined: map[string]int64{me: 1, "m-b": 1, "m-c": 1}, Retired: map[string]int64{"m-r": 2}}
	}

	fc := clocktesting.NewFakeClock(shareT0)
	standing := joinedShare(t, fc)
	me := standing.member.Name()
	standing.epoch.set(sharding.Epoch{Serial: 1, Members: four(me), Joined: map[string]int64{me: 1, "m-b": 1, "m-c": 1, "m-r": 1}})
	standing.Adopting()
	standing.epoch.set(death(me))
	for _, step := range []time.Duration{0, remainderAfterTakeover / 2, remainderAfterTakeover/2 - time.Millisecond} {
		fc.Step(step)
		if got, _ := standing.Adopting(); len(got["m-r"]) != 0 {
			t.Fatalf("%s after the death, the retired member's selections = %v, want none yet", fc.Since(shareT0), got["m-r"])
		}
	}
	fc.Step(time.Millisecond)
	got, _ := standing.Adopting()
	if sels := got["m-r"]; len(sels) != 1 || !sels[0].Matches(labels.Set{mainKeys.Owner: "m-r"}) {
		t.Fatalf("%s after the death, the retired member's selections = %v, want its remainder, with its objects without a bucket label", fc.Since(shareT0), sels)
	}

	fresh := joinedShare(t, clocktesting.NewFakeClock(shareT0))
	fresh.epoch.set(death(fresh.member.Name()))
	if got, _ := fresh.Adopting(); len(got["m-r"]) != 1 {
		t.Errorf("a member with no standby cache: the retired member's selections at its death = %v, want one at once", got["m-r"])
	}
}

// Once most of a standby cache's buckets are no longer to stand by for
// (members joined), and no adoption counts on it, it is replaced by one
// that selects exactly the buckets to stand by for now.
func TestRingShareStandbyFollowsTheMembers(t *testing.T) {
	r := joinedShare(t, clocktesting.NewFakeClock(shareT0))
	me := r.member.Name()
	two := []string{me, "m-b"}
	r.epoch.set(sharding.Epoch{Serial: 1, Members: two, Joined: map[string]int64{me: 1, "m-b": 1}})
	first, _ := r.Adopting()
	if len(first) != 1 || len(first[ownership.Standby]) != 1 {
		t.Fatalf("Adopting() of a ring of two = %v, want one standby selection alone", first)
	}
	five := []string{me, "m-b", "m-c", "m-d", "m-e"}
	r.epoch.set(sharding.Epoch{Serial: 2, Members: five, Joined: map[string]int64{me: 1, "m-b": 1, "m-c": 2, "m-d": 2, "m-e": 2}})
	got, _ := r.Adopting()
	sels := got[ownership.Standby]
	if len(sels) != 1 || sels[0].String() == first[ownership.Standby][0].String() {
		t.Fatalf("the standby selections after three joins = %v, want one new one", sels)
	}
	for _, b := range sharding.AllBuckets() {
		if want := sharding.Second(b, five) == me; sels[0].Matches(labels.Set{mainKeys.Bucket: b}) != want {
			t.Errorf("bucket %s: selected %v, want %v", b, !want, want)
		}
	}
	r.noStandby = true
	if got, _ := r.Adopting(); len(got) != 0 {
		t.Errorf("a member without standby stands by: %v", got)
	}
	r.noStandby = false
	alone := sharding.Epoch{Serial: 3, Members: []string{me}, Joined: map[string]int64{me: 1}}
	r.epoch.set(alone)
	if got, _ := r.Adopting(); len(got) != 0 {
		t.Errorf("the only member stands by: %v", got)
	}
}

// An object whose bucket label names this adopter's bucket while its name
// falls into another adopter's is moved to its bucket by this one, the
// only adopter that selects it; nothing else is rebucketed.
func TestRingShareRebuckets(t *testing.T) {
	r := joinedShare(t, clocktesting.NewFakeClock(shareT0))
	me := r.member.Name()
	adopters := []string{me, "m-b"}
	r.epoch.set(sharding.Epoch{Serial: 2, Members: adopters, Joined: map[string]int64{me: 1, "m-b": 1}, Retired: map[string]int64{"m-r": 2}})
	theirs := ""
	for i := range 1000 {
		if name := fmt.Sprint("o-", i); sharding.Owner(ring.BucketLabel("ns", name), adopters) == "m-b" {
			theirs = name
			break
		}
	}
	var myBucket, theirBucket string
	for _, b := range sharding.AllBuckets() {
		switch sharding.Owner(b, adopters) {
		case me:
			myBucket = b
		case "m-b":
			theirBucket = b
		}
	}
	withBucket := func(name, owner, bucket string) *corev1.ConfigMap {
		cm := named(name, owner, owner)
		if bucket != "" {
			cm.Labels[mainKeys.Bucket] = bucket
		}
		return cm
	}
	want := map[string]any{"metadata": map[string]any{"resourceVersion": "42",
		"labels": map[string]any{mainKeys.Bucket: ring.BucketLabel("ns", theirs)}}}
	if diff := cmp.Diff(want, r.Rebucket(withBucket(theirs, "m-r", myBucket))); diff != "" {
		t.Errorf("another adopter's object in this one's bucket: -want +got:\n%s", diff)
	}
	for what, obj := range map[string]*corev1.ConfigMap{
		"its bucket right":             withBucket(theirs, "m-r", ring.BucketLabel("ns", theirs)),
		"no bucket label":              withBucket(theirs, "m-r", ""),
		"a label that is no bucket":    withBucket(theirs, "m-r", "junk"),
		"another adopter's bucket":     withBucket(theirs, "m-r", theirBucket),
		"an owner that is not retired": withBucket(theirs, "m-b", myBucket),
		"an owner label edited by hand": func() *corev1.ConfigMap {
			o := withBucket(theirs, "m-r", myBucket)
			o.Annotations[mainKeys.Granted] = "m-b"
			return o
		}(),
	} {
		if got := r.Rebucket(obj); got != nil {
			t.Errorf("an object with %s is rebucketed: %v", what, got)
		}
	}
}
