package integration

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/kopf-go/kopf/internal/ring"
	"github.com/kopf-go/kopf/internal/sharding"
)

// Every object gets an owner label naming the live member that hashing
// picks, written directly, and the assigner sums the change up in one
// line.
func TestAssignerGivesEveryObjectAnOwner(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	m1, m2, m3, _, _ := startThree(t, ns, nil)
	logs, _ := startAssigner(t, ns, "kopf@host-1", ringLease)

	live := names(m1, m2, m3)
	eventually(t, "every object owned as hashed", ownedAsHashed(t, ns, 30, live))
	owners := map[string]int{}
	for _, p := range placements(t, ns) {
		owners[p.owner]++
	}
	if len(owners) != 3 {
		t.Errorf("owners = %v, want all three members", owners)
	}
	eventually(t, "the summary", func() bool {
		return logs.has("The ring's objects without a live owner are placed", `"objects"=30`, `"ownersSet"=30`)
	})
	if !logs.has("Assigned " + ns + "/cm-00 to ") {
		t.Error("no debug line for the assignment of cm-00")
	}
}

// A member that joins is handed its share by the objects' owners: the
// assigner writes nothing to the objects, but publishes the new members
// on the ring's epoch Lease, and leaves the objects alone once the owners
// have handed them over.
func TestAssignerPublishesAJoin(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	m1, m2, m3, _, _ := startThree(t, ns, nil)
	startAssigner(t, ns, "kopf@host-1", ringLease)
	eventually(t, "every object owned", ownedAsHashed(t, ns, 30, names(m1, m2, m3)))
	eventually(t, "the three members published", func() bool { return slices.Equal(published(t, ns), sorted(names(m1, m2, m3))) })
	before := placements(t, ns)

	m4, _ := startMember(t, ns, "kopf@host-4", nil)
	four := names(m1, m2, m3, m4)
	eventually(t, "the four members published", func() bool { return slices.Equal(published(t, ns), sorted(four)) })
	// Every object that the assigner would place (none: each has a live
	// owner) would be placed within this second.
	time.Sleep(time.Second)
	if now := placements(t, ns); !maps.Equal(before, now) {
		t.Errorf("the assigner wrote to objects at a join: %v, were %v", now, before)
	}

	// The old owners hand over, as their reconcilers do.
	moving := 0
	for name := range before {
		if sharding.Owner(sharding.ObjectKey(ns, name), four) == m4.Name() {
			acknowledge(t, ns, name, m4.Name())
			moving++
		}
	}
	if moving == 0 {
		t.Fatal("no object hashes to the new member; the test shows nothing")
	}
	acked := placements(t, ns)
	createConfigMaps(t, ns, "late", 1)
	eventually(t, "the object created after the handovers owned", ownedAsHashed(t, ns, 31, four))
	now := placements(t, ns)
	for name := range acked {
		if now[name] != acked[name] {
			t.Errorf("%s changed after its handover: %+v, was %+v", name, now[name], acked[name])
		}
	}
}

// published are the members on the ring's epoch Lease in ns.
func published(t *testing.T, ns string) []string {
	t.Helper()
	lease := &coordinationv1.Lease{}
	err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: ring.EpochLease("main")}, lease)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return ring.Published(lease).Members
}

// epochOf is the ring's epoch as its Lease in ns holds it (a zero one if
// there is none).
func epochOf(t *testing.T, ns string) sharding.Epoch {
	t.Helper()
	lease := &coordinationv1.Lease{}
	err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: ring.EpochLease("main")}, lease)
	if apierrors.IsNotFound(err) {
		return sharding.Epoch{}
	}
	if err != nil {
		t.Fatal(err)
	}
	return ring.Published(lease)
}

// adoptedBy tells whether the epoch retires the member, with adopters
// as its adopters, and every object is as it was before: the retired
// member's objects still carry its name, for its adopters to work on.
func adoptedBy(t *testing.T, ns string, retired *ring.Member, before map[string]placement, adopters ...*ring.Member) func() bool {
	return func() bool {
		e := epochOf(t, ns)
		if !e.IsRetired(retired.Name()) || !slices.Equal(e.Adopters(retired.Name()), sorted(names(adopters...))) {
			return false
		}
		if now := placements(t, ns); !maps.Equal(before, now) {
			t.Fatalf("objects were written at %s's retirement: %v, were %v", retired.Name(), now, before)
		}
		return true
	}
}

// sorted is a sorted copy.
func sorted(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

// acknowledge moves a ConfigMap's owner label and grant to next and drops
// the handover request, as the old owner does, guarded by resourceVersion.
func acknowledge(t *testing.T, ns, name, next string) {
	t.Helper()
	cm := &corev1.ConfigMap{}
	if err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, cm); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFromWithOptions(cm.DeepCopy(), client.MergeFromWithOptimisticLock{})
	keys := ringKeys(ns)
	cm.Labels[keys.Owner] = next
	cm.Annotations[keys.Granted] = next
	delete(cm.Annotations, keys.Next)
	if err := env.Client.Patch(context.Background(), cm, patch); err != nil {
		t.Fatalf("acknowledge the handover of %s: %v", name, err)
	}
}

// A member that stops gracefully releases its Lease, and is retired at
// once: its objects are adopted by the others, with no write to them. The
// assigner's lease duration here is a minute, so a retirement within
// eventually's 30 s cannot be an expiry. Once the adopters have claimed
// every one of its objects (here the test claims them, as the adopters'
// engines do), the assigner drops it from the epoch.
func TestAssignerRetiresALeaverAtOnce(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	m1, m2, m3, stop2, _ := startThree(t, ns, nil)
	logs, _ := startAssigner(t, ns, "kopf@host-1", time.Minute)
	eventually(t, "every object owned", ownedAsHashed(t, ns, 30, names(m1, m2, m3)))
	before := placements(t, ns)

	if err := stop2(); err != nil {
		t.Fatalf("the leaving member: Start() = %v", err)
	}
	eventually(t, "the leaver retired, its objects adopted by the others", adoptedBy(t, ns, m2, before, m1, m3))
	if !logs.has("Members are retired", m2.Name()) {
		t.Errorf("the assigner did not say that it retired %s: %q", m2.Name(), logs.all())
	}
	// The objects stay as they are: a second for anything the assigner
	// would write.
	time.Sleep(time.Second)
	if now := placements(t, ns); !maps.Equal(before, now) {
		t.Errorf("the assigner wrote to objects at a leave: %v, were %v", now, before)
	}
	e := epochOf(t, ns)
	claimed := 0
	for name, p := range before {
		if p.owner == m2.Name() {
			acknowledge(t, ns, name, e.Adopter(sharding.ObjectKey(ns, name), m2.Name()))
			claimed++
		}
	}
	if claimed == 0 {
		t.Fatal("the leaver had no objects; the test shows nothing")
	}
	eventually(t, "the leaver dropped from the epoch once no object carries its name", func() bool {
		e := epochOf(t, ns)
		return !e.IsRetired(m2.Name()) && slices.Equal(e.Members, sorted(names(m1, m3)))
	})
}

// A list of the objects without a live owner that fails is tried again:
// objects that do not change meanwhile, which no watch event would bring,
// still get their owners.
func TestAssignerListsAgainAfterAFailedList(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	m1, m2, m3, _, _ := startThree(t, ns, nil)
	var failing, failed atomic.Int32
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTrip(func(req *http.Request) (*http.Response, error) {
			// The assigner's sweep of the objects without a live owner,
			// listed, or watched with its first events, at a change of
			// members.
			q := req.URL.Query()
			if req.Method == http.MethodGet && strings.HasSuffix(req.URL.Path, "/configmaps") &&
				strings.Contains(q.Get("labelSelector"), "notin") && failing.Add(-1) >= 0 {
				failed.Add(1)
				return nil, errors.New("the test refuses this list")
			}
			return rt.RoundTrip(req)
		})
	})
	failing.Store(2)
	startAssignerOn(t, ns, "kopf@host-1", time.Minute, clock.RealClock{}, cfg)
	eventually(t, "every object owned", ownedAsHashed(t, ns, 30, names(m1, m2, m3)))
	if failed.Load() != 2 {
		t.Errorf("the test refused %d lists, want 2", failed.Load())
	}
}

// A member that stops renewing without deleting its Lease keeps its
// objects until its Lease expires on the assigner's clock; then it is
// retired, and its objects adopted by the others, with no write to them.
func TestAssignerRetiresADeadMemberAfterTheLease(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	m1, m2, m3, failing, stop3 := startStallableRing(t, ns)
	// The assigner's clock is fake and stands still but when the test
	// steps it: every renewal it sees counts from the time it shows then.
	fake := clocktesting.NewFakeClock(time.Now())
	// The assigner lists on the epoch the members whose Leases go
	// unrenewed, and every replica's observer tells of them (the ring's
	// members collect garbage then, ahead of the takeover).
	var silentMu sync.Mutex
	silent := map[string]int{}
	logs, _ := startAssignerOn(t, ns, "kopf@host-1", ringLease, fake, env.Config, func(s *ring.AssignerSettings) {
		s.OnSilent = func(member string) {
			silentMu.Lock()
			defer silentMu.Unlock()
			silent[member]++
		}
	})
	eventually(t, "every object owned", ownedAsHashed(t, ns, 30, names(m1, m2, m3)))
	before := placements(t, ns)

	failing.Store(true)
	<-m3.Fenced()
	// Just short of a lease duration after the stalled member's last
	// renewal, the others renew, and the assigner sees it: it has had its
	// chance to count the stalled member dead, and must not have.
	fake.Step(ringLease - ringLease/4)
	seenRenewing(t, ns, m1, m2)
	if !maps.Equal(before, placements(t, ns)) || logs.has("Members stopped renewing their Leases") || leaseVersion(t, ns, m3.LeaseName()) == "" {
		t.Fatal("the assigner counted the stalled member dead before its lease duration had run out")
	}
	// The stalled member was told silent, once while the epoch lists it,
	// however often the assigner looks (the others, whose renewals the
	// fake clock may not have caught up with yet at the first look, renew
	// since).
	eventually(t, "the stalled member told silent", func() bool {
		silentMu.Lock()
		defer silentMu.Unlock()
		return silent[m3.Name()] > 0
	})
	fake.Step(ringPeriod / 2)
	fake.Step(ringPeriod / 2)
	silentMu.Lock()
	if silent[m3.Name()] != 1 {
		t.Errorf("the stalled member was told silent %d times, want once", silent[m3.Name()])
	}
	silentMu.Unlock()
	fake.Step(ringLease / 4) // past its end
	eventually(t, "the dead member retired, its objects adopted by the others", adoptedBy(t, ns, m3, before, m1, m2))
	<-m3.Fenced()
	if err := stop3(); !errors.Is(err, ring.ErrMembershipLost) {
		t.Errorf("the stalled member: Start() = %v, want %v", err, ring.ErrMembershipLost)
	}
}

// Two assigners elect one; the other takes over when it stops.
func TestAssignersElectOne(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	m1, m2, m3, _, _ := startThree(t, ns, nil)
	logsA, stopA := startAssigner(t, ns, "assigner-a", ringLease)
	logsB, stopB := startAssigner(t, ns, "assigner-b", ringLease)
	live := names(m1, m2, m3)
	eventually(t, "every object owned as hashed", ownedAsHashed(t, ns, 30, live))

	holder := assignerHolder(t, ns)
	leader, follower, stopLeader := logsA, logsB, stopA
	if holder == "assigner-b" {
		leader, follower, stopLeader = logsB, logsA, stopB
	} else if holder != "assigner-a" {
		t.Fatalf("the assigner's Lease is held by %q", holder)
	}
	if !leader.has("This replica is the ring's assigner.") || follower.has("This replica is the ring's assigner.") {
		t.Fatalf("not one assigner alone: leader's log %q, follower's %q", leader.all(), follower.all())
	}

	stopLeader()
	eventually(t, "the other assigner leads", func() bool { return follower.has("This replica is the ring's assigner.") })
	createConfigMaps(t, ns, "late", 1)
	eventually(t, "the late object owned as hashed", ownedAsHashed(t, ns, 31, live))
	if got := assignerHolder(t, ns); got == holder {
		t.Errorf("the assigner's Lease is still held by %q, who stopped", got)
	}
}

// assignerHolder is the holder of the ring's election Lease.
func assignerHolder(t *testing.T, ns string) string {
	t.Helper()
	lease := &coordinationv1.Lease{}
	key := types.NamespacedName{Namespace: ns, Name: ring.AssignerLease("main")}
	if err := env.Client.Get(context.Background(), key, lease); err != nil {
		t.Fatal(err)
	}
	if lease.Spec.HolderIdentity == nil {
		return ""
	}
	return *lease.Spec.HolderIdentity
}

// startStallableRing starts three members of the ring "main" and 30
// ConfigMaps in ns. The third member's Lease writes fail once failing is
// set: it stops renewing, as a stalled or cut-off replica does.
func startStallableRing(t *testing.T, ns string) (m1, m2, m3 *ring.Member, failing *atomic.Bool, stop3 func() error) {
	t.Helper()
	failing = &atomic.Bool{}
	m1, m2, m3, _, stop3 = startThree(t, ns, stallable(t, failing))
	return m1, m2, m3, failing, stop3
}

// startThree starts the members kopf@host-1, -2 and -3 of the ring
// "main", the third writing its Lease with third (env.Client if nil), and
// 30 ConfigMaps in ns; stop2 and stop3 stop the second and the third.
func startThree(t *testing.T, ns string, third client.Client) (m1, m2, m3 *ring.Member, stop2, stop3 func() error) {
	t.Helper()
	m1, _ = startMember(t, ns, "kopf@host-1", nil)
	m2, stop2 = startMember(t, ns, "kopf@host-2", nil)
	m3, stop3 = startMember(t, ns, "kopf@host-3", third)
	createConfigMaps(t, ns, "cm", 30)
	return m1, m2, m3, stop2, stop3
}

// stallable is a client whose writes fail once failing is set.
func stallable(t *testing.T, failing *atomic.Bool) client.Client {
	t.Helper()
	refuse := errors.New("the test's API server refuses this member")
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return interceptor.NewClient(wc, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if failing.Load() {
				return refuse
			}
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			if failing.Load() {
				return refuse
			}
			return c.Update(ctx, obj, opts...)
		},
	})
}

// A replica that becomes the assigner has followed the ring's Leases all
// along: a member that stopped renewing before the term began counts as
// dead as soon as its lease duration has run out, not a lease duration
// after the term began. The new assigner's clock is fake and stands still
// from its election on, so without that history it could never count the
// member dead. It deletes the dead member's Lease, unchanged since it saw
// it last.
func TestANewAssignerKnowsTheLeasesHistory(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	m1, m2, m3, failing, stop3 := startStallableRing(t, ns)
	_, stopA := startAssigner(t, ns, "assigner-a", ringLease)
	eventually(t, "every object owned", ownedAsHashed(t, ns, 30, names(m1, m2, m3)))
	stopA()
	// The test holds the election for as long as it likes, so that B only
	// follows at first.
	holdElection(t, ns, "the-test")
	fake := clocktesting.NewFakeClock(time.Now())
	logsB, _ := startAssignerOn(t, ns, "assigner-b", ringLease, fake, env.Config)

	before := placements(t, ns)
	failing.Store(true)
	<-m3.Fenced()
	fake.Step(ringLease + time.Second)
	// Renewals of m1 and m2 seen after the step count from the stepped
	// time; two of each make sure B has seen one.
	seenRenewing(t, ns, m1, m2)
	if !maps.Equal(before, placements(t, ns)) {
		t.Fatal("objects moved while no assigner was elected")
	}
	releaseElection(t, ns)
	eventually(t, "the dead member retired, its objects adopted by the others", adoptedBy(t, ns, m3, before, m1, m2))
	if !logsB.has("This replica is the ring's assigner.") {
		t.Error("the member was retired, but B did not say it is the assigner")
	}
	if !logsB.has("Members stopped renewing their Leases", m3.Name()) {
		t.Errorf("B did not say that %s is dead: %q", m3.Name(), logsB.all())
	}
	if v := leaseVersion(t, ns, m3.LeaseName()); v != "" {
		t.Errorf("the dead member's Lease is still there (version %s)", v)
	}
	if err := stop3(); !errors.Is(err, ring.ErrMembershipLost) {
		t.Errorf("the stalled member: Start() = %v, want %v", err, ring.ErrMembershipLost)
	}
}

// seenRenewing waits until each member has renewed its Lease twice, so
// that an assigner following the ring's Leases has seen at least one of
// those renewals: after a step of its fake clock, one counting from the
// stepped time.
func seenRenewing(t *testing.T, ns string, members ...*ring.Member) {
	t.Helper()
	for _, m := range members {
		for range 2 {
			version := leaseVersion(t, ns, m.LeaseName())
			eventually(t, m.Name()+" renews", func() bool { return leaseVersion(t, ns, m.LeaseName()) != version })
		}
	}
}

// holdElection makes the ring's election Lease held by holder for an
// hour, as if by a live assigner.
func holdElection(t *testing.T, ns, holder string) {
	t.Helper()
	seconds := int32(3600)
	now := metav1.NewMicroTime(time.Now())
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: ring.AssignerLease("main")},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &seconds,
			AcquireTime: &now, RenewTime: &now},
	}
	existing := &coordinationv1.Lease{}
	err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(lease), existing)
	switch {
	case apierrors.IsNotFound(err):
		err = env.Client.Create(context.Background(), lease)
	case err == nil:
		existing.Spec = lease.Spec
		err = env.Client.Update(context.Background(), existing)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// releaseElection deletes the ring's election Lease: any candidate may
// take it.
func releaseElection(t *testing.T, ns string) {
	t.Helper()
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: ring.AssignerLease("main")}}
	if err := env.Client.Delete(context.Background(), lease); err != nil {
		t.Fatal(err)
	}
}

// leaseVersion is a Lease's resourceVersion, "" if there is none.
func leaseVersion(t *testing.T, ns, name string) string {
	t.Helper()
	lease := &coordinationv1.Lease{}
	err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, lease)
	if apierrors.IsNotFound(err) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return lease.ResourceVersion
}
