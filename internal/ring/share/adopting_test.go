package share

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kopf-go/kopf/internal/ring"
	"github.com/kopf-go/kopf/internal/sharding"
)

// An adopter watches its own buckets of a retired member's objects; when
// another adopter dies, the buckets it is given get a selection of their
// own beside the first, which stays as it was (its cache runs on).
func TestRingShareAdoptingGrowsByBuckets(t *testing.T) {
	r := joinedShare(t, clocktesting.NewFakeClock(shareT0))
	me := r.member.Name()
	three := []string{me, "m-b", "m-c"}
	r.epoch.set(sharding.Epoch{Serial: 2, Members: three, Joined: map[string]int64{me: 1, "m-b": 1, "m-c": 1}, Retired: map[string]int64{"m-r": 2}})
	first, _ := r.Adopting()
	if len(first["m-r"]) != 1 {
		t.Fatalf("Adopting() = %v, want one selection of m-r's objects", first)
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
	obj := func(bucket string) labels.Set { return labels.Set{mainKeys.Owner: "m-r", mainKeys.Bucket: bucket} }
	if !first["m-r"][0].Matches(obj(mine)) || first["m-r"][0].Matches(obj(cs)) {
		t.Errorf("the first selection %s does not select this member's buckets alone", first["m-r"][0])
	}

	// m-c dies: its buckets go to this member and to m-b.
	r.epoch.set(sharding.Epoch{Serial: 3, Members: []string{me, "m-b"}, Joined: map[string]int64{me: 1, "m-b": 1},
		Retired: map[string]int64{"m-r": 2, "m-c": 3}})
	second, _ := r.Adopting()
	sels := second["m-r"]
	if len(sels) != 2 || sels[0].String() != first["m-r"][0].String() {
		t.Fatalf("after an adopter's death, Adopting() = %v, want the first selection kept and one more", second)
	}
	if !sels[1].Matches(obj(cs)) || sels[1].Matches(obj(mine)) || sels[1].Matches(labels.Set{mainKeys.Owner: "m-r"}) {
		t.Errorf("the second selection %s does not select the gained buckets alone", sels[1])
	}
	if len(second["m-c"]) != 1 {
		t.Errorf("the dead adopter's own objects are not selected: %v", second)
	}
	again, _ := r.Adopting()
	if diff := cmp.Diff(fmt.Sprint(second), fmt.Sprint(again)); diff != "" {
		t.Errorf("an unchanged epoch changed the selections -first +second:\n%s", diff)
	}

	// m-r's objects are all claimed: it is dropped, and so are its
	// selections; were it retired again, they would start anew.
	r.epoch.set(sharding.Epoch{Serial: 4, Members: []string{me, "m-b"}, Joined: map[string]int64{me: 1, "m-b": 1}, Retired: map[string]int64{"m-c": 3}})
	if got, _ := r.Adopting(); len(got) != 1 || got["m-r"] != nil {
		t.Errorf("after m-r was dropped, Adopting() = %v", got)
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
