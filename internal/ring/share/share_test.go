package share

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/kopf-go/kopf/internal/daemons"
	"github.com/kopf-go/kopf/internal/ownership"
	"github.com/kopf-go/kopf/internal/ring"
	"github.com/kopf-go/kopf/internal/sharding"
)

var shareT0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

// keys are the ring "main"'s keys, its Leases in "ops".
var mainKeys = ring.KeysOf("ops", "main")

// leaseScheme knows Leases and ConfigMaps.
func leaseScheme() *runtime.Scheme {
	scheme := runtime.NewScheme()
	_ = coordinationv1.AddToScheme(scheme)
	_ = corev1.AddToScheme(scheme)
	return scheme
}

// joinedShare is the ring share of a member of "main" that has joined at
// shareT0 by the fake clock, and runs until the test ends.
func joinedShare(t *testing.T, fc *clocktesting.FakeClock) *Ownership {
	t.Helper()
	member, err := ring.NewMember(fake.NewClientBuilder().WithScheme(leaseScheme()).Build(),
		ring.Settings{Ring: "main", Namespace: "ops", Identity: "replica-1", Clock: fc})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = member.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case <-member.Joined():
	case <-time.After(10 * time.Second):
		t.Fatal("the member did not join")
	}
	return &Ownership{name: "main", keys: mainKeys, member: member, clock: fc, log: logr.Discard(),
		assigner: ring.AssignerSettings{Namespace: "ops", Durations: ring.Durations{LeaseDuration: 15 * time.Second}}}
}

// placed is a ConfigMap with the ring's label and annotations.
func placed(owner, granted, next string) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "ns", ResourceVersion: "42",
		Labels: map[string]string{}, Annotations: map[string]string{}}}
	for key, value := range map[string]string{mainKeys.Owner: owner} {
		if value != "" {
			cm.Labels[key] = value
		}
	}
	for key, value := range map[string]string{mainKeys.Granted: granted, mainKeys.Next: next} {
		if value != "" {
			cm.Annotations[key] = value
		}
	}
	return cm
}

// A member works on an object only while its tenure holds and both the
// owner label and the grant name it; it hands one over when the ring's
// published members hash it to another member, unless the object is being
// deleted; it puts back a label edited to name it; it selects its own
// objects into its cache.
func TestRingShareClaims(t *testing.T) {
	fc := clocktesting.NewFakeClock(shareT0)
	r := joinedShare(t, fc)
	me := r.member.Name()
	deleting := placed(me, me, "")
	deleting.DeletionTimestamp = &metav1.Time{Time: shareT0}
	tests := []struct {
		name    string
		obj     *corev1.ConfigMap
		epoch   []string
		at      time.Duration
		want    ownership.ClaimKind
		next    string
		putBack bool
	}{
		{"its own object, before any members are published", placed(me, me, ""), nil, 0, ownership.Work, "", false},
		{"its own object, hashed to it", placed(me, me, ""), []string{me}, 0, ownership.Work, "", false},
		{"its own object, hashed to another member", placed(me, me, ""), []string{"m-b"}, 0, ownership.HandOver, "m-b", false},
		{"a handover request of an earlier assigner is not heeded", placed(me, me, "m-b"), []string{me}, 0, ownership.Work, "", false},
		{"its own object being deleted, hashed to another member", deleting, []string{"m-b"}, 0, ownership.Work, "", false},
		{"a label edited by hand to this member", placed(me, "m-b", ""), []string{me}, 0, ownership.StandBy, "", true},
		{"a label without a grant", placed(me, "", ""), []string{me}, 0, ownership.StandBy, "", true},
		{"its own object, after the renew deadline", placed(me, me, ""), []string{"m-b"}, ring.DefaultRenewDeadline, ownership.StandBy, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r.epoch.set(sharding.Epoch{Members: tt.epoch})
			got := r.Claim(tt.obj, shareT0.Add(tt.at))
			if got.Kind != tt.want || got.Next != tt.next || got.PutBack != tt.putBack {
				t.Errorf("claim() = %+v, want kind %d, next %q, put back %v", got, tt.want, tt.next, tt.putBack)
			}
			if got.Kind == ownership.StandBy && got.Why == "" {
				t.Error("a stand-by without a reason to log")
			}
		})
	}
	sel := r.CacheSelector()
	if !sel.Matches(labels.Set{mainKeys.Owner: me}) || sel.Matches(labels.Set{mainKeys.Owner: "m-b"}) {
		t.Errorf("cacheSelector() = %s selects other members' objects or not its own", sel)
	}
}

// named is a ConfigMap of the given name with the ring's label and grant.
func named(name, owner, granted string) *corev1.ConfigMap {
	cm := placed(owner, granted, "")
	cm.Name = name
	return cm
}

// nameHashedTo is the name of an object that members hash to member.
func nameHashedTo(t *testing.T, member string, members []string) string {
	t.Helper()
	for i := range 1000 {
		name := fmt.Sprint("o-", i)
		key := sharding.ObjectKey("ns", name)
		if sharding.Owner(key, members) == member {
			return name
		}
	}
	t.Fatalf("no object hashes to %s", member)
	return ""
}

// A member works on the objects of a retired member that hash to it among
// the retired member's adopters, and on no other of them; it claims them
// before its first write, and is fenced from the others; it hands over an
// adopted object that the epoch hashes to a member that joined since; it
// puts back a label edited to the retired member's name; it watches the
// retired member's objects only while it is one of the adopters.
func TestRingShareAdopts(t *testing.T) {
	fc := clocktesting.NewFakeClock(shareT0)
	r := joinedShare(t, fc)
	me := r.member.Name()
	adopters := []string{me, "m-b"}
	r.epoch.set(sharding.Epoch{Serial: 2, Members: adopters, Joined: map[string]int64{me: 1, "m-b": 1}, Retired: map[string]int64{"m-r": 2}})
	mine, theirs := nameHashedTo(t, me, adopters), nameHashedTo(t, "m-b", adopters)
	fence, claim := r.Fence(), r.ClaimAdopted()

	if got := r.Claim(named(mine, "m-r", "m-r"), shareT0); got.Kind != ownership.Work {
		t.Errorf("an adopted object of its own: claim = %+v, want work", got)
	}
	if !r.Adopts(named(mine, "m-r", "m-r")) || r.Adopts(named(theirs, "m-r", "m-r")) {
		t.Error("Adopts() does not tell this member's adopted objects from the other adopter's")
	}
	if got := r.Claim(named(theirs, "m-r", "m-r"), shareT0); got.Kind != ownership.StandBy || got.PutBack || got.Why == "" {
		t.Errorf("another adopter's object: claim = %+v, want a stand-by with a reason, nothing put back", got)
	}
	if err := fence(named(mine, "m-r", "m-r")); err != nil {
		t.Errorf("the fence refuses an adopted object of its own: %v", err)
	}
	if err := fence(named(theirs, "m-r", "m-r")); err == nil {
		t.Error("the fence lets this member write to another adopter's object")
	}
	want := map[string]any{"metadata": map[string]any{"resourceVersion": "42",
		"labels":      map[string]any{mainKeys.Owner: me, mainKeys.Bucket: ring.BucketLabel("ns", mine)},
		"annotations": map[string]any{mainKeys.Granted: me, mainKeys.Next: nil}}}
	if diff := cmp.Diff(want, claim(named(mine, "m-r", "m-r"))); diff != "" {
		t.Errorf("the claim of an adopted object -want +got:\n%s", diff)
	}
	deleting := named(mine, "m-r", "m-r")
	deleting.DeletionTimestamp = &metav1.Time{Time: shareT0}
	if got := r.Claim(deleting, shareT0); got.Kind != ownership.Work {
		t.Errorf("an adopted object being deleted: claim = %+v, want work (its adopter completes the deletion)", got)
	}
	for _, obj := range []*corev1.ConfigMap{named(theirs, "m-r", "m-r"), named(mine, me, me), named(mine, "m-r", "m-b"), deleting} {
		if got := claim(obj); got != nil {
			t.Errorf("an object that is not adopted by this member (%v %v) is claimed: %v", obj.Labels, obj.Annotations, got)
		}
	}
	if got := r.Claim(named(mine, "m-r", "m-b"), shareT0); got.Kind != ownership.StandBy || !got.PutBack {
		t.Errorf("a label edited to the retired member's name: claim = %+v, want a stand-by that puts it back", got)
	}
	adopting, _ := r.Adopting()
	myBucket, theirBucket := ring.BucketLabel("ns", mine), ring.BucketLabel("ns", theirs)
	if sels, ok := adopting["m-r"]; !ok || len(adopting) != 1 || len(sels) != 1 ||
		!sels[0].Matches(labels.Set{mainKeys.Owner: "m-r", mainKeys.Bucket: myBucket}) ||
		!sels[0].Matches(labels.Set{mainKeys.Owner: "m-r"}) ||
		sels[0].Matches(labels.Set{mainKeys.Owner: "m-r", mainKeys.Bucket: theirBucket}) ||
		sels[0].Matches(labels.Set{mainKeys.Owner: me, mainKeys.Bucket: myBucket}) {
		t.Errorf("Adopting() = %v, want the objects of m-r in this member's buckets, and those without a bucket, and no standby selection (a takeover pauses it)", adopting)
	}

	// A member joins: the adopted object that now hashes to it is worked
	// on by its adopter until it is claimed, and then handed over.
	joined := []string{me, "m-b", "m-c"}
	moving := ""
	for i := range 1000 {
		name := fmt.Sprint("o-", i)
		key := sharding.ObjectKey("ns", name)
		if sharding.Owner(key, adopters) == me && sharding.Owner(key, joined) == "m-c" {
			moving = name
			break
		}
	}
	r.epoch.set(sharding.Epoch{Serial: 3, Members: joined, Joined: map[string]int64{me: 1, "m-b": 1, "m-c": 3}, Retired: map[string]int64{"m-r": 2}})
	if got := r.Claim(named(moving, "m-r", "m-r"), shareT0); got.Kind != ownership.Work {
		t.Errorf("an adopted object that hashes to a member that joined since: claim = %+v, want work until it is claimed", got)
	}
	if got := r.Claim(named(moving, me, me), shareT0); got.Kind != ownership.HandOver || got.Next != "m-c" {
		t.Errorf("the same object once claimed: claim = %+v, want a handover to m-c", got)
	}

	// This member is retired itself: it stands by on its own objects, and
	// writes to none.
	r.epoch.set(sharding.Epoch{Serial: 4, Members: []string{"m-b"}, Joined: map[string]int64{"m-b": 1}, Retired: map[string]int64{me: 4}})
	if got := r.Claim(named(mine, me, me), shareT0); got.Kind != ownership.StandBy || got.Why == "" {
		t.Errorf("a retired member's own object: claim = %+v, want a stand-by with a reason", got)
	}
	if err := fence(named(mine, me, me)); err == nil {
		t.Error("the fence lets a retired member write to its own object")
	}

	// This member joined after the retirement: it adopts nothing of it.
	r.epoch.set(sharding.Epoch{Serial: 3, Members: adopters, Joined: map[string]int64{me: 3, "m-b": 1}, Retired: map[string]int64{"m-r": 2}})
	if adopting, _ := r.Adopting(); adopting["m-r"] != nil {
		t.Errorf("a member that joined after the retirement adopts: %v", adopting)
	}
	if got := r.Claim(named(mine, "m-r", "m-r"), shareT0); got.Kind != ownership.StandBy {
		t.Errorf("a member that joined after the retirement works on its objects: %+v", got)
	}
}

// A label edited by hand is put back to the granted member, or removed if
// the object is granted to nobody, guarded by the version seen.
func TestRingSharePutsBack(t *testing.T) {
	r := joinedShare(t, clocktesting.NewFakeClock(shareT0))
	me := r.member.Name()
	tests := []struct {
		name  string
		obj   *corev1.ConfigMap
		owner any
	}{
		{"granted to another member", placed(me, "m-b", ""), "m-b"},
		{"granted to nobody", placed(me, "", ""), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := map[string]any{"metadata": map[string]any{"resourceVersion": "42",
				"labels": map[string]any{"ops.shard.kopf.dev/main": tt.owner}}}
			if diff := cmp.Diff(want, r.PutBack(tt.obj)); diff != "" {
				t.Errorf("PutBack() -want +got:\n%s", diff)
			}
		})
	}
}

// A change of the published members has the engine look again at the
// objects that hash elsewhere now, and only at those; the same members
// published again change nothing.
func TestRingShareRechecksAtAnEpoch(t *testing.T) {
	fc := clocktesting.NewFakeClock(shareT0)
	r := joinedShare(t, fc)
	me := r.member.Name()
	r.epoch.set(sharding.Epoch{Members: []string{me}})
	rechecked := make(chan func(string, string) bool, 4)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = r.Watch(ctx, func() map[string]int { return nil }, func(stray func(string, string) bool) { rechecked <- stray })
	}()
	defer func() { cancel(); <-done }()
	select {
	case <-rechecked:
		t.Fatal("rechecked before the members changed")
	case <-time.After(50 * time.Millisecond):
	}
	r.epoch.set(sharding.Epoch{Members: []string{me}})
	r.epoch.set(sharding.Epoch{Members: []string{"m-b"}})
	var stray func(string, string) bool
	select {
	case stray = <-rechecked:
	case <-time.After(10 * time.Second):
		t.Fatal("a change of the members was not rechecked")
	}
	if !stray("ns", "x") {
		t.Error("an object hashed to the other member is not told to be looked at")
	}
	r.epoch.set(sharding.Epoch{Members: []string{me, "m-b"}})
	stray = <-rechecked
	for _, name := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		if _, elsewhere := sharding.Stray(sharding.ObjectKey("ns", name), me, []string{me, "m-b"}); stray("ns", name) != elsewhere {
			t.Errorf("stray(%q) = %v, want %v", name, !elsewhere, elsewhere)
		}
	}
}

// The acknowledgement moves the label and the grant, sets the bucket and
// drops the request, guarded by the version the owner let go of; a
// written one counts as released.
func TestRingShareLetsGo(t *testing.T) {
	r := joinedShare(t, clocktesting.NewFakeClock(shareT0))
	me := r.member.Name()
	obj := placed(me, me, "m-b")
	ack, settle := r.LetGo(obj, "m-b")
	want := map[string]any{"metadata": map[string]any{
		"resourceVersion": "42",
		"labels":          map[string]any{"ops.shard.kopf.dev/main": "m-b", "ops.shard.kopf.dev/main-bucket": ring.BucketLabel(obj.Namespace, obj.Name)},
		"annotations":     map[string]any{"ops.shard.kopf.dev/main-granted": "m-b", "ops.shard.kopf.dev/main-next": nil},
	}}
	if diff := cmp.Diff(want, ack); diff != "" {
		t.Errorf("letGo() -want +got:\n%s", diff)
	}
	settle(false)
	settle(true)
	if n := r.released.Load(); n != 1 {
		t.Errorf("released = %d, want 1 (the written one)", n)
	}
}

// blocking is a runnable that runs until it is released after its stop.
type blocking struct{ release chan struct{} }

func (b *blocking) Start(ctx context.Context) error {
	<-ctx.Done()
	<-b.release
	return nil
}

// stoppingMember runs a membership whose engine stops only when released;
// it returns the Lease's key, the membership's result, and a channel that
// hears of each write of the Lease after the join.
func stoppingMember(t *testing.T, sup *daemons.Supervisor) (c client.Client, key client.ObjectKey, cancel func(), engine *blocking, result chan error, writes <-chan struct{}) {
	t.Helper()
	written := make(chan struct{}, 1024)
	c = interceptor.NewClient(fake.NewClientBuilder().WithScheme(leaseScheme()).Build(), interceptor.Funcs{
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			err := c.Update(ctx, obj, opts...)
			written <- struct{}{}
			return err
		},
	})
	member, err := ring.NewMember(c, ring.Settings{Ring: "main", Namespace: "ops", Identity: "replica-1",
		Durations: ring.Durations{RenewPeriod: 10 * time.Millisecond, RenewDeadline: time.Second, LeaseDuration: 2 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	engine = &blocking{release: make(chan struct{})}
	f := newFinishing(engine)
	m := &membership{member: member, idle: sup.Idle, log: logr.Discard(), after: []*finishing{f}}
	ctx, cancel := context.WithCancel(context.Background())
	result = make(chan error, 1)
	go func() { result <- m.Start(ctx) }()
	go func() { _ = f.Start(ctx) }()
	<-member.Joined()
	for len(written) > 0 {
		<-written // the join's
	}
	return c, client.ObjectKey{Namespace: "ops", Name: member.LeaseName()}, cancel, engine, result, written
}

// A graceful stop releases the Lease only after the engine has stopped:
// the ring moves the objects at once when it is released.
func TestMembershipReleasesAfterTheEngine(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	sup := daemons.New(daemons.Settings{})
	c, key, cancel, engine, result, writes := stoppingMember(t, sup)
	cancel()
	// Two writes of the Lease after the stop: renewals while the engine
	// stops (a release would be one too, and is caught below).
	for range 2 {
		select {
		case <-writes:
		case <-time.After(10 * time.Second):
			t.Fatal("the member wrote its Lease no more after the stop, though the engine was still stopping")
		}
	}
	if lease := (&coordinationv1.Lease{}); c.Get(context.Background(), key, lease) != nil || ring.Released(lease) {
		t.Fatal("the Lease was given up while the engine was still stopping")
	} else if !ring.Stopping(lease) {
		t.Error("the Lease renewed while the engine stops does not say that the member stops: the ring would place new objects on it")
	}
	close(engine.release)
	if err := <-result; err != nil {
		t.Errorf("Start() = %v, want nil after a graceful stop", err)
	}
	lease := &coordinationv1.Lease{}
	if err := c.Get(context.Background(), key, lease); err != nil || !ring.Released(lease) {
		t.Errorf("the Lease is not released after the engine stopped: %v", err)
	}
}

// A graceful stop that leaves something running (a handler in flight, a
// daemon that ignored its stop) does not release the Lease: the ring must
// wait for it to expire, by when the process has exited.
func TestMembershipLeavesTheLeaseToExpireIfWorkStillRuns(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	sup := daemons.New(daemons.Settings{})
	done := sup.Track("a handler that ignores its cancellation")
	defer done()
	c, key, cancel, engine, result, _ := stoppingMember(t, sup)
	cancel()
	close(engine.release)
	if err := <-result; err != nil {
		t.Errorf("Start() = %v, want nil after a graceful stop", err)
	}
	lease := &coordinationv1.Lease{}
	if err := c.Get(context.Background(), key, lease); err != nil || ring.Released(lease) {
		t.Errorf("the Lease was released (%v) while a handler still ran", err)
	}
}

// The placer places an object being created on the member the epoch
// hashes it to, in a namespace the ring serves, and nothing else: not
// before an ownership or an epoch, not an object without a name, not one
// that carries the ring's owner label already.
func TestPlacerPlacesNewObjectsByTheEpoch(t *testing.T) {
	var p Placer
	if _, ok := p.Place("ns", "o-1", nil); ok {
		t.Error("a placer without an ownership placed an object")
	}
	r := joinedShare(t, clocktesting.NewFakeClock(shareT0))
	r.assigner.Namespaces = []string{"ns"}
	p.set(r)
	if _, ok := p.Place("ns", "o-1", nil); ok {
		t.Error("an object was placed before any epoch")
	}
	members := []string{"m-a", "m-b", "m-c"}
	r.epoch.set(sharding.Epoch{Serial: 1, Members: members})
	got, ok := p.Place("ns", "o-1", nil)
	want := Placement{OwnerLabel: mainKeys.Owner, GrantAnnotation: mainKeys.Granted, Owner: sharding.Owner(sharding.ObjectKey("ns", "o-1"), members),
		BucketLabel: mainKeys.Bucket, Bucket: ring.BucketLabel("ns", "o-1")}
	if !ok || got != want {
		t.Errorf("Place() = %+v, %v; want %+v", got, ok, want)
	}
	for _, tt := range []struct {
		name, namespace, object string
		labels                  map[string]string
	}{
		{"no name yet", "ns", "", nil},
		{"an owner label already", "ns", "o-1", map[string]string{mainKeys.Owner: "m-a"}},
		{"a namespace the ring does not serve", "elsewhere", "o-1", nil},
	} {
		if got, ok := p.Place(tt.namespace, tt.object, tt.labels); ok {
			t.Errorf("%s: placed as %+v", tt.name, got)
		}
	}
}

// A member retired while the ring had no live member (every adopter
// joined at the retirement) has its objects claimed before any work when
// another ring has member Leases beside this one's: the stand-by's write
// is the claim, and ClaimsFirst says so (the engine keeps such objects
// from the low-level handlers until the claim lands). Without another ring, they are worked on at once, as any
// adopted object; a retirement among established members never waits.
func TestRingShareClaimsOrphanedObjectsFirstBesideAnotherRing(t *testing.T) {
	r := joinedShare(t, clocktesting.NewFakeClock(shareT0))
	me := r.member.Name()
	orphaned := sharding.Epoch{Serial: 5, Members: []string{me}, Joined: map[string]int64{me: 5}, Retired: map[string]int64{"m-r": 5}}
	name := nameHashedTo(t, me, []string{me})
	obj := named(name, "m-r", "m-r")
	obj.Labels[mainKeys.Bucket] = ring.BucketLabel("ns", name)
	lease := func(name, ringName string) *coordinationv1.Lease {
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "ops", Name: name, Labels: map[string]string{ring.RingLabel: ringName}}}
	}
	for _, tt := range []struct {
		what   string
		leases []client.Object
		epoch  sharding.Epoch
		first  bool
	}{
		{"orphaned, another ring about", []client.Object{lease("kopf-shard-main-m1", "main"), lease("kopf-shard-renamed-m2", "renamed")}, orphaned, true},
		{"orphaned, this ring alone", []client.Object{lease("kopf-shard-main-m1", "main")}, orphaned, false},
		{"a death among established members, another ring about", []client.Object{lease("kopf-shard-renamed-m2", "renamed")},
			sharding.Epoch{Serial: 5, Members: []string{me}, Joined: map[string]int64{me: 1}, Retired: map[string]int64{"m-r": 5}}, false},
	} {
		t.Run(tt.what, func(t *testing.T) {
			r.adopting = adopting{}
			r.leases = fake.NewClientBuilder().WithScheme(leaseScheme()).WithObjects(tt.leases...).Build()
			r.epoch.set(tt.epoch)
			got := r.Claim(obj, shareT0)
			if first := r.ClaimsFirst(obj); first != tt.first {
				t.Errorf("ClaimsFirst() = %v, want %v, as Claim decides", first, tt.first)
			}
			if !tt.first {
				if got.Kind != ownership.Work {
					t.Errorf("Claim() = %+v, want work at once", got)
				}
				return
			}
			if got.Kind != ownership.StandBy || !got.PutBack || got.Why == "" {
				t.Fatalf("Claim() = %+v, want a stand-by that writes, with a reason", got)
			}
			want := map[string]any{"metadata": map[string]any{"resourceVersion": "42",
				"labels":      map[string]any{mainKeys.Owner: me, mainKeys.Bucket: ring.BucketLabel("ns", name)},
				"annotations": map[string]any{mainKeys.Granted: me, mainKeys.Next: nil}}}
			if diff := cmp.Diff(want, r.PutBack(obj)); diff != "" {
				t.Errorf("the stand-by's write is not the claim: -want +got:\n%s", diff)
			}
		})
	}
}

// An object counts as written since its owner's retirement when its
// version is newer than the first epoch this member saw retire the
// owner (the first read from a Lease); a later epoch that still retires
// it changes nothing, and an owner not retired has nothing to compare
// with.
func TestRingShareTellsObjectsWrittenSinceTheirOwnersRetirement(t *testing.T) {
	r := joinedShare(t, clocktesting.NewFakeClock(shareT0))
	me := r.member.Name()
	at := func(version, owner string) *corev1.ConfigMap {
		obj := named("o-1", owner, owner)
		obj.ResourceVersion = version
		return obj
	}
	r.epoch.set(sharding.Epoch{Serial: 3, Members: []string{me}, Retired: map[string]int64{"m-unread": 3}})
	r.epoch.set(sharding.Epoch{Serial: 4, Members: []string{me}, Retired: map[string]int64{"m-unread": 3, "m-r": 4}, Version: "200"})
	r.epoch.set(sharding.Epoch{Serial: 5, Members: []string{me}, Retired: map[string]int64{"m-unread": 3, "m-r": 4}, Version: "300"})
	for _, tt := range []struct {
		what string
		obj  *corev1.ConfigMap
		want bool
	}{
		{"written before the retirement", at("150", "m-r"), false},
		{"written at it", at("200", "m-r"), false},
		{"written since, before a later epoch", at("250", "m-r"), true},
		{"a version that does not compare", at("x", "m-r"), true},
		{"an owner first retired in an epoch read from no Lease, written before the first read from one", at("150", "m-unread"), false},
		{"the same, written since", at("250", "m-unread"), true},
		{"a live owner", at("250", me), false},
	} {
		if got := r.ChangedSinceRetirement(tt.obj); got != tt.want {
			t.Errorf("%s: ChangedSinceRetirement() = %v, want %v", tt.what, got, tt.want)
		}
	}
	r.epoch.set(sharding.Epoch{Serial: 6, Members: []string{me}, Version: "400"})
	if r.ChangedSinceRetirement(at("450", "m-r")) {
		t.Error("an owner no longer retired still has a retirement to compare with")
	}
	r.epoch.set(sharding.Epoch{Serial: 7, Members: []string{me}, Retired: map[string]int64{"m-r": 7}, Version: "500"})
	if r.ChangedSinceRetirement(at("450", "m-r")) || !r.ChangedSinceRetirement(at("550", "m-r")) {
		t.Error("an owner retired anew does not count from its new retirement")
	}
}

// The version that the assigner recorded a margin before a retirement
// is what an object's version compares with, not the epoch in which this
// replica first saw the retirement: a late write that landed within the
// margin before the retirement counts as written since, and so does one
// that landed before an epoch that a relisted watch of the Leases showed
// this replica late.
func TestRingShareComparesWithTheVersionWrittenBeforeTheRetirement(t *testing.T) {
	r := joinedShare(t, clocktesting.NewFakeClock(shareT0))
	me := r.member.Name()
	at := func(version string) *corev1.ConfigMap {
		obj := named("o-1", "m-r", "m-r")
		obj.ResourceVersion = version
		return obj
	}
	// This replica's watch relisted: the first epoch it sees retire m-r
	// is at 900, though m-r was retired at 300 and the assigner recorded
	// 250, written a margin before.
	r.epoch.set(sharding.Epoch{Serial: 8, Members: []string{me}, Retired: map[string]int64{"m-r": 4},
		WrittenBefore: map[string]string{"m-r": "250"}, Version: "900"})
	for _, tt := range []struct {
		what string
		obj  *corev1.ConfigMap
		want bool
	}{
		{"written before the recorded version", at("240"), false},
		{"a late write landed within the margin before the retirement", at("280"), true},
		{"written after the retirement, before this replica saw it", at("600"), true},
	} {
		if got := r.ChangedSinceRetirement(tt.obj); got != tt.want {
			t.Errorf("%s: ChangedSinceRetirement() = %v, want %v", tt.what, got, tt.want)
		}
	}
}

// The adopter of a retired member's bucket puts back an owner label
// edited by hand to that member while the grant names another: to the
// grant. Nothing else is put right so: an object adopted as it is, one
// of another adopter's bucket, one whose label names a live member.
func TestRingSharePutsBackALabelEditedToARetiredMember(t *testing.T) {
	r := joinedShare(t, clocktesting.NewFakeClock(shareT0))
	me := r.member.Name()
	r.epoch.set(sharding.Epoch{Serial: 4, Members: []string{me}, Joined: map[string]int64{me: 1}, Retired: map[string]int64{"m-r": 4}})
	edited := named("o-1", "m-r", "m-live")
	body := r.PutRight(edited)
	labels, _ := body["metadata"].(map[string]any)["labels"].(map[string]any)
	if labels[mainKeys.Owner] != "m-live" {
		t.Errorf("PutRight() = %v, want the owner label back to the grant m-live", body)
	}
	for what, obj := range map[string]*corev1.ConfigMap{
		"adopted as it is":       named("o-2", "m-r", "m-r"),
		"labelled a live member": named("o-3", me, "m-live"),
	} {
		if got := r.PutRight(obj); got != nil {
			t.Errorf("%s: PutRight() = %v, want nothing", what, got)
		}
	}
	r.epoch.set(sharding.Epoch{Serial: 5, Members: []string{me, "m-other"}, Joined: map[string]int64{me: 1, "m-other": 1}, Retired: map[string]int64{"m-r": 4}})
	for i := range 50 {
		obj := named(fmt.Sprint("o-", i), "m-r", "m-live")
		if mine := r.PutRight(obj) != nil; mine != (sharding.Owner(sharding.ObjectKey(obj.Namespace, obj.Name), []string{me, "m-other"}) == me) {
			t.Fatalf("%s: put right by this member %v, though its bucket's adopter is another", obj.Name, mine)
		}
	}
}
