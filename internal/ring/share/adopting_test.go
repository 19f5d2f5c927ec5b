package share

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kopf-go/kopf/internal/ownership"
	"github.com/kopf-go/kopf/internal/ring"
	"github.com/kopf-go/kopf/internal/sharding"
)

// An adopter watches its own buckets of a retired member's objects, and
// stands by for the buckets it would adopt if their owner died; when
// another adopter dies, the buckets it is given are held by its standby
// cache already: nothing is listed again, and the dead adopter's own
// objects are selected but for those buckets.
func TestRingShareAdoptingGrowsByBuckets(t *testing.T) {
	r := joinedShare(t, clocktesting.NewFakeClock(shareT0))
	me := r.member.Name()
	three := []string{me, "m-b", "m-c"}
	r.epoch.set(sharding.Epoch{Serial: 2, Members: three, Joined: map[string]int64{me: 1, "m-b": 1, "m-c": 1}, Retired: map[string]int64{"m-r": 2}})
	first, _ := r.Adopting()
	if len(first["m-r"]) != 1 || len(first[ownership.Standby]) != 1 {
		t.Fatalf("Adopting() = %v, want one selection of m-r's objects and one to stand by", first)
	}
	bucketOf := func(adopter string, among []string) string {
		for _, b := range sharding.AllBuckets() {
			if sharding.Owner(b, among) == adopter && (adopter == me || sharding.Owner(b, []string{me, "m-b"}) == me) {
				return b
			}
		}
		t.Fatalf("no bucket of %s", adopter)
		return ""
	}
	mine, cs := bucketOf(me, three), bucketOf("m-c", three) // cs: a bucket of m-c's that goes to this member once m-c dies
	obj := func(owner, bucket string) labels.Set {
		return labels.Set{mainKeys.Owner: owner, mainKeys.Bucket: bucket}
	}
	if !first["m-r"][0].Matches(obj("m-r", mine)) || first["m-r"][0].Matches(obj("m-r", cs)) {
		t.Errorf("the first selection %s does not select this member's buckets alone", first["m-r"][0])
	}
	standby := first[ownership.Standby][0]
	if !standby.Matches(obj("m-c", cs)) || !standby.Matches(obj("m-r", cs)) || standby.Matches(obj(me, mine)) {
		t.Errorf("the standby selection %s does not select m-c's bucket that this member would adopt alone", standby)
	}

	// m-c dies: its buckets go to this member and to m-b.
	r.epoch.set(sharding.Epoch{Serial: 3, Members: []string{me, "m-b"}, Joined: map[string]int64{me: 1, "m-b": 1},
		Retired: map[string]int64{"m-r": 2, "m-c": 3}})
	second, _ := r.Adopting()
	if sels := second["m-r"]; len(sels) != 1 || sels[0].String() != first["m-r"][0].String() {
		t.Errorf("after an adopter's death, m-r's selections = %v, want the first kept alone (the standby cache holds the gained buckets)", sels)
	}
	if sels := second[ownership.Standby]; len(sels) == 0 || sels[0].String() != standby.String() {
		t.Errorf("after a death, the standby selections = %v, want the one the adoption counts on kept first", sels)
	}
	cSels := second["m-c"]
	if len(cSels) != 1 || !cSels[0].Matches(labels.Set{mainKeys.Owner: "m-c"}) || cSels[0].Matches(obj("m-c", cs)) {
		t.Errorf("the dead adopter's own objects: selections %v, want those without a bucket label and none the standby cache holds", cSels)
	}
	again, _ := r.Adopting()
	if diff := cmp.Diff(fmt.Sprint(second), fmt.Sprint(again)); diff != "" {
		t.Errorf("an unchanged epoch changed the selections -first +second:\n%s", diff)
	}

	// m-r's objects are all claimed: it is dropped, and so are its
	// selections; were it retired again, they would start anew.
	r.epoch.set(sharding.Epoch{Serial: 4, Members: []string{me, "m-b"}, Joined: map[string]int64{me: 1, "m-b": 1}, Retired: map[string]int64{"m-c": 3}})
	if got, _ := r.Adopting(); got["m-r"] != nil || got["m-c"] == nil {
		t.Errorf("after m-r was dropped, Adopting() = %v", got)
	}
}

// A bucket that an adopter is given, and that no standby cache holds
// (the adopters are not the members: one joined after the retirement),
// gets a selection of its own beside the first, which stays as it was.
func TestRingShareAdoptingListsWhatNoStandbyHolds(t *testing.T) {
	r := joinedShare(t, clocktesting.NewFakeClock(shareT0))
	me := r.member.Name()
	four := []string{me, "m-b", "m-c", "m-j"}
	r.epoch.set(sharding.Epoch{Serial: 3, Members: four, Joined: map[string]int64{me: 1, "m-b": 1, "m-c": 1, "m-j": 3},
		Retired: map[string]int64{"m-r": 2}})
	first, _ := r.Adopting()
	held := first[ownership.Standby]
	unheld := ""
	for _, b := range sharding.AllBuckets() {
		if sharding.Owner(b, []string{me, "m-b", "m-c"}) == "m-c" && sharding.Owner(b, []string{me, "m-b"}) == me && !held[0].Matches(labels.Set{mainKeys.Bucket: b}) {
			unheld = b
			break
		}
	}
	if unheld == "" {
		t.Fatal("no bucket of m-r's that m-c's death gives this member is left out of its standby selection")
	}
	r.epoch.set(sharding.Epoch{Serial: 4, Members: []string{me, "m-b", "m-j"}, Joined: map[string]int64{me: 1, "m-b": 1, "m-j": 3},
		Retired: map[string]int64{"m-r": 2, "m-c": 4}})
	second, _ := r.Adopting()
	sels := second["m-r"]
	if len(sels) != 2 || sels[0].String() != first["m-r"][0].String() {
		t.Fatalf("m-r's selections after an adopter's death = %v, want the first kept and one more", sels)
	}
	if !sels[1].Matches(labels.Set{mainKeys.Owner: "m-r", mainKeys.Bucket: unheld}) || sels[1].Matches(labels.Set{mainKeys.Owner: "m-r"}) {
		t.Errorf("the second selection %s does not select the gained bucket %s", sels[1], unheld)
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
