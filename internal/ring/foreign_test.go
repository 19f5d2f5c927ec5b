package ring

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kopf-go/kopf/internal/sharding"
)

// Other rings' keys are found by their form: a namespace, the domain and
// a ring name; the ring's own keys are not another ring's, and neither
// are keys of the domain that no ring writes, nor those of versions
// before the grant annotation.
func TestForeignRingsOf(t *testing.T) {
	own := KeysOf("operators", "main")
	renamed, moved, nexted := KeysOf("operators", "old"), KeysOf("elsewhere", "main"), KeysOf("operators", "older")
	labels := map[string]string{
		own.Owner: "m1", renamed.Owner: "mold", moved.Owner: "x",
		"shard.kopf.dev/main":          "legacy", // before the grant annotation: no namespace
		"Bad_NS.shard.kopf.dev/main":   "y",      // no namespace's name
		"operators.shard.kopf.dev/a.b": "z",      // no ring's name
		"app":                          "demo",
	}
	annotations := map[string]string{
		own.Granted: "m1", renamed.Granted: "mold", moved.Granted: "x2", nexted.Next: "m9",
		"shard.kopf.dev/main-granted":                 "legacy",
		"kopf.zalando.org/last-handled-configuration": "{}",
	}
	got := foreignRingsOf(own, labels, annotations)
	want := []foreignRing{
		{namespace: "elsewhere", ring: "main", owner: "x", granted: "x2"},
		{namespace: "operators", ring: "old", owner: "mold", granted: "mold"},
		{namespace: "operators", ring: "older"},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(foreignRing{})); diff != "" {
		t.Errorf("foreignRingsOf() -want +got:\n%s", diff)
	}
	if got := foreignRingsOf(own, map[string]string{own.Owner: "m1"}, map[string]string{own.Granted: "m1"}); len(got) != 0 {
		t.Errorf("the ring's own keys seen as another ring's: %+v", got)
	}
}

// The grant, not the label, is what holds an object in another ring: a
// label alone grants nothing, and a grant whose label was moved away is
// put back by that ring.
func TestForeignHolder(t *testing.T) {
	for _, tt := range []struct {
		f    foreignRing
		want string
	}{
		{foreignRing{owner: "m1", granted: "m1"}, "m1"},
		{foreignRing{owner: "m2", granted: "m1"}, "m1"},
		{foreignRing{granted: "m1"}, "m1"},
		{foreignRing{owner: "m1"}, ""},
		{foreignRing{granted: "not a member"}, ""},
	} {
		if got := tt.f.holder(); got != tt.want {
			t.Errorf("%+v.holder() = %q, want %q", tt.f, got, tt.want)
		}
	}
}

// A placement removes other rings' keys (their bucket labels too, which
// would keep the object in their standby caches), so that the object
// belongs to this ring alone.
func TestPatchBodyDropsOtherRings(t *testing.T) {
	s := seen{uid: "u-1", resourceVersion: "42", foreign: []foreignRing{{namespace: "ops", ring: "old", owner: "m0", granted: "m0"}}}
	got, err := patchBody(KeysOf("ops", "main"), s, sharding.Move{Owner: "m1"}, "")
	if err != nil {
		t.Fatal(err)
	}
	want := `{"metadata":{"annotations":{"ops.shard.kopf.dev/main-granted":"m1","ops.shard.kopf.dev/main-next":null,` +
		`"ops.shard.kopf.dev/old-granted":null,"ops.shard.kopf.dev/old-next":null},` +
		`"labels":{"ops.shard.kopf.dev/main":"m1","ops.shard.kopf.dev/old":null,"ops.shard.kopf.dev/old-bucket":null},"resourceVersion":"42","uid":"u-1"}}`
	if diff := cmp.Diff(canonical(t, want), canonical(t, string(got))); diff != "" {
		t.Errorf("patchBody() -want +got:\n%s", diff)
	}
}

// countingLeases counts the reads of fakeLeases, and can have a Lease
// renewed just before a deletion of it arrives.
type countingLeases struct {
	*fakeLeases
	gets int
	// renewBeforeDelete renews that Lease when its deletion is asked.
	renewBeforeDelete string
	// epoch, if set, are the members the ring's epoch Lease lists.
	epoch []string
}

func (c *countingLeases) Get(ctx context.Context, name string, opts metav1.GetOptions) (*coordinationv1.Lease, error) {
	c.gets++
	lease, err := c.fakeLeases.Get(ctx, name, opts)
	if err == nil && c.epoch != nil && name == EpochLease("old") {
		lease.Annotations = map[string]string{MembersAnnotation: strings.Join(c.epoch, ",")}
	}
	return lease, err
}

func (c *countingLeases) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	if name == c.renewBeforeDelete {
		c.versions[name] += "+"
		c.renewBeforeDelete = ""
	}
	return c.fakeLeases.Delete(ctx, name, opts)
}

// newForeignFixture is a judge of other rings' members with the default
// durations (lease 15 s, renew period 5 s) on a fake clock, started at
// t0, reading the Leases of the namespace "old-ns" (every other
// namespace's reads fail).
func newForeignFixture(t *testing.T) (*foreignLeases, *countingLeases, *clocktesting.FakeClock) {
	t.Helper()
	fc := clocktesting.NewFakeClock(t0)
	leases := &countingLeases{fakeLeases: &fakeLeases{versions: map[string]string{}, released: map[string]bool{}, fail: map[string]error{}}}
	d, err := Durations{}.Resolved()
	if err != nil {
		t.Fatal(err)
	}
	forbidden := apierrors.NewForbidden(leaseResource, "", nil)
	fl := newForeignLeases(func(ns string) leaseAPI {
		if ns != "old-ns" {
			return &fakeLeases{fail: map[string]error{leaseName("old", "m1"): forbidden}}
		}
		return leases
	}, fc, d)
	return fl, leases, fc
}

func ask(t *testing.T, fl *foreignLeases, ns, member string) (bool, time.Time, error) {
	t.Helper()
	return fl.liveUntil(context.Background(), foreignMember{namespace: ns, ring: "old", member: member})
}

// A member whose Lease renews is live, from each new version it is seen
// with for a lease duration; a Lease read a moment ago is not read again.
func TestForeignMemberRenewing(t *testing.T) {
	fl, leases, fc := newForeignFixture(t)
	leases.versions[leaseName("old", "m1")] = "1"
	fc.SetTime(t0.Add(20 * time.Second)) // past the doubt of the start: it does not matter to a Lease that is there
	live, until, err := ask(t, fl, "old-ns", "m1")
	if err != nil || !live || !until.Equal(t0.Add(35*time.Second)) {
		t.Fatalf("a Lease seen now: live %v until %v (%v), want live until a lease duration from now", live, until, err)
	}
	fc.Step(4 * time.Second)
	leases.versions[leaseName("old", "m1")] = "2"
	if live, until, _ := ask(t, fl, "old-ns", "m1"); !live || !until.Equal(t0.Add(35*time.Second)) || leases.gets != 1 {
		t.Errorf("within a renew period of the last read: live %v until %v after %d reads, want the last read's answer", live, until, leases.gets)
	}
	fc.Step(2 * time.Second)
	if live, until, _ := ask(t, fl, "old-ns", "m1"); !live || !until.Equal(t0.Add(41*time.Second)) || leases.gets != 2 {
		t.Errorf("a renewal read: live %v until %v after %d reads, want a lease duration from its reading", live, until, leases.gets)
	}
	if len(leases.deleted) > 0 {
		t.Errorf("a live member's Lease was deleted: %v", leases.deleted)
	}
}

// A Lease unchanged for a lease duration since it was first seen is
// deleted on the condition that it is still that version, and its member
// is gone; a renewal that comes before the deletion keeps it live.
func TestForeignMemberExpired(t *testing.T) {
	fl, leases, fc := newForeignFixture(t)
	leases.versions[leaseName("old", "m1")] = "1"
	leases.versions[leaseName("old", "m2")] = "1"
	for _, m := range []string{"m1", "m2"} {
		if live, _, _ := ask(t, fl, "old-ns", m); !live {
			t.Fatalf("%s: not live when first seen", m)
		}
	}
	fc.Step(15*time.Second - time.Nanosecond)
	if live, _, _ := ask(t, fl, "old-ns", "m1"); !live {
		t.Error("m1 gone before its lease ran out")
	}
	fc.Step(time.Nanosecond)
	leases.renewBeforeDelete = leaseName("old", "m2")
	if live, _, err := ask(t, fl, "old-ns", "m1"); live || err != nil {
		t.Errorf("m1 expired: live %v (%v), want gone", live, err)
	}
	if live, until, err := ask(t, fl, "old-ns", "m2"); !live || err != nil || !until.Equal(t0.Add(30*time.Second)) {
		t.Errorf("m2, renewed as its deletion came: live %v until %v (%v), want live a lease duration from now", live, until, err)
	}
	if diff := cmp.Diff([]string{leaseName("old", "m1")}, leases.deleted); diff != "" {
		t.Errorf("deleted -want +got:\n%s", diff)
	}
	gets := leases.gets
	fc.Step(time.Hour)
	if live, _, _ := ask(t, fl, "old-ns", "m1"); live || leases.gets != gets {
		t.Errorf("a member known gone: live %v, read again %v", live, leases.gets != gets)
	}
}

// A released Lease is a member that stopped; a Lease that is gone leaves
// its member live until its last version seen has expired, and one never
// seen until a lease duration after this observer's start.
func TestForeignMemberGone(t *testing.T) {
	fl, leases, fc := newForeignFixture(t)
	leases.versions[leaseName("old", "released")] = "3"
	leases.released[leaseName("old", "released")] = true
	leases.versions[leaseName("old", "deleted")] = "1"
	if live, _, _ := ask(t, fl, "old-ns", "released"); live {
		t.Error("a released Lease's member is live")
	}
	fc.Step(2 * time.Second)
	if live, _, _ := ask(t, fl, "old-ns", "deleted"); !live {
		t.Fatal("a Lease that is there: not live")
	}
	if live, until, _ := ask(t, fl, "old-ns", "never"); !live || !until.Equal(t0.Add(15*time.Second)) {
		t.Errorf("a Lease never seen, just after the start: live %v until %v, want live until the start's lease duration", live, until)
	}
	delete(leases.versions, leaseName("old", "deleted"))
	fc.Step(10 * time.Second)
	if live, until, _ := ask(t, fl, "old-ns", "deleted"); !live || !until.Equal(t0.Add(17*time.Second)) {
		t.Errorf("a Lease deleted after it was seen: live %v until %v, want live until its lease runs out", live, until)
	}
	fc.Step(5 * time.Second)
	for _, m := range []string{"deleted", "never"} {
		if live, _, err := ask(t, fl, "old-ns", m); live || err != nil {
			t.Errorf("%s: live %v (%v) after its lease ran out, want gone", m, live, err)
		}
	}
	if len(leases.deleted) > 0 {
		t.Errorf("Leases deleted: %v", leases.deleted)
	}
}

// A Lease that cannot be read, or whose expiry cannot be confirmed, is
// an error: its member may be live.
func TestForeignMemberUnreadable(t *testing.T) {
	fl, leases, fc := newForeignFixture(t)
	if live, _, err := ask(t, fl, "other-ns", "m1"); live || !apierrors.IsForbidden(err) {
		t.Errorf("a forbidden read: live %v, error %v, want the error", live, err)
	}
	leases.versions[leaseName("old", "m3")] = "1"
	ask(t, fl, "old-ns", "m3")
	fc.Step(15 * time.Second)
	failing := apierrors.NewForbidden(leaseResource, leaseName("old", "m3"), nil)
	fl.leases = func(string) leaseAPI { return &deleteFails{countingLeases: leases, err: failing} }
	if _, _, err := ask(t, fl, "old-ns", "m3"); !apierrors.IsForbidden(err) {
		t.Errorf("an expiry that cannot be confirmed: error %v, want the deletion's", err)
	}
}

// deleteFails refuses every deletion.
type deleteFails struct {
	*countingLeases
	err error
}

func (d *deleteFails) Delete(context.Context, string, metav1.DeleteOptions) error { return d.err }

// Another ring holds its objects while any member of its epoch is live,
// not only the granted one: its other members may be adopting the
// granted member's objects without a write. Once none is live, its
// objects are free.
func TestForeignRingHolds(t *testing.T) {
	fl, leases, fc := newForeignFixture(t)
	ctx := context.Background()
	f := foreignRing{namespace: "old-ns", ring: "old", owner: "left", granted: "left"}
	leases.versions[leaseName("old", "left")] = "1"
	leases.released[leaseName("old", "left")] = true
	leases.versions[leaseName("old", "adopter")] = "4"
	if member, live, _, err := fl.ringHolds(ctx, f); live || err != nil {
		t.Errorf("without an epoch: held by %q (%v), want free: the granted member left", member, err)
	}
	fc.Step(5 * time.Second) // the epoch's read is a renew period old
	leases.versions[EpochLease("old")] = "9"
	leases.epoch = []string{"adopter", "left"}
	member, live, until, err := fl.ringHolds(ctx, f)
	if !live || err != nil || member != "adopter" || !until.Equal(fc.Now().Add(15*time.Second)) {
		t.Errorf("held by %q: %v until %v (%v), want held by the adopter for a lease duration", member, live, until, err)
	}
	leases.released[leaseName("old", "adopter")] = true
	leases.versions[leaseName("old", "adopter")] = "5"
	fc.Step(5 * time.Second)
	if member, live, _, err := fl.ringHolds(ctx, f); live || err != nil {
		t.Errorf("every member of the epoch gone: held by %q (%v), want free", member, err)
	}

	forbidden := apierrors.NewForbidden(leaseResource, EpochLease("old"), nil)
	fl.leases = func(string) leaseAPI { return &fakeLeases{fail: map[string]error{EpochLease("old"): forbidden}} }
	fc.Step(5 * time.Second)
	if _, live, _, err := fl.ringHolds(ctx, f); live || !apierrors.IsForbidden(err) {
		t.Errorf("an epoch that cannot be read: live %v, error %v, want the error", live, err)
	}
}
