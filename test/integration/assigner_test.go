package integration

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
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
	m1, _ := startMember(t, ns, "kopf@host-1", nil)
	m2, _ := startMember(t, ns, "kopf@host-2", nil)
	m3, _ := startMember(t, ns, "kopf@host-3", nil)
	createConfigMaps(t, ns, "cm", 30)
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
		return logs.has("The ring's objects are placed", `"objects"=30`, `"ownersSet"=30`, `"handoversRequested"=0`)
	})
	if !logs.has("Assigned " + ns + "/cm-00 to ") {
		t.Error("no debug line for the assignment of cm-00")
	}
}

// A member that joins is handed its share by the objects' owners: the
// assigner only asks them, and leaves the objects alone once they have.
func TestAssignerAsksForHandovers(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	m1, _ := startMember(t, ns, "kopf@host-1", nil)
	m2, _ := startMember(t, ns, "kopf@host-2", nil)
	m3, _ := startMember(t, ns, "kopf@host-3", nil)
	createConfigMaps(t, ns, "cm", 30)
	logs, _ := startAssigner(t, ns, "kopf@host-1", ringLease)
	eventually(t, "every object owned", ownedAsHashed(t, ns, 30, names(m1, m2, m3)))
	before := placements(t, ns)

	m4, _ := startMember(t, ns, "kopf@host-4", nil)
	four := names(m1, m2, m3, m4)
	moving := map[string]bool{}
	for name, p := range before {
		moving[name] = sharding.Owner(p.uid, four) == m4.Name()
	}
	eventually(t, "handover requests for the new member's share", func() bool {
		for name, p := range placements(t, ns) {
			if moving[name] && (p.next != m4.Name() || p.owner != before[name].owner) {
				return false
			}
		}
		return true
	})
	for name, p := range placements(t, ns) {
		if !moving[name] && p != before[name] {
			t.Errorf("%s changed though it stays with its owner: %+v, was %+v", name, p, before[name])
		}
	}
	asked := 0
	for _, moves := range moving {
		if moves {
			asked++
		}
	}
	eventually(t, "the summary of the join", func() bool {
		return logs.has("The ring's objects are placed", `"ownersSet"=0`, fmt.Sprintf(`"handoversRequested"=%d`, asked))
	})

	// The old owners acknowledge, as their reconcilers will.
	for name, moves := range moving {
		if moves {
			acknowledge(t, ns, name, m4.Name())
		}
	}
	acked := placements(t, ns)
	createConfigMaps(t, ns, "late", 1)
	eventually(t, "the object created after the acknowledgements owned", ownedAsHashed(t, ns, 31, four))
	stillFor(t, time.Second, "the acknowledged objects untouched", func() bool {
		now := placements(t, ns)
		for name := range acked {
			if now[name] != acked[name] {
				return false
			}
		}
		return true
	})
}

// acknowledge moves a ConfigMap's owner label to next and drops the
// handover request, as the old owner does, guarded by resourceVersion.
func acknowledge(t *testing.T, ns, name, next string) {
	t.Helper()
	cm := &corev1.ConfigMap{}
	if err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, cm); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFromWithOptions(cm.DeepCopy(), client.MergeFromWithOptimisticLock{})
	cm.Labels[ring.OwnerLabel("main")] = next
	delete(cm.Annotations, ring.NextAnnotation("main"))
	if err := env.Client.Patch(context.Background(), cm, patch); err != nil {
		t.Fatalf("acknowledge the handover of %s: %v", name, err)
	}
}

// stillFor checks that cond holds throughout d: for "nothing happens
// shortly after" checks, with d well inside what the durations allow.
func stillFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if !cond() {
			t.Fatalf("not so any more: %s", what)
		}
	}
}

// A member that stops gracefully deletes its Lease, and its objects get
// new owners at once. The assigner's lease duration here is a minute, so
// a move within eventually's 30 s cannot be an expiry.
func TestAssignerMovesALeaversObjectsAtOnce(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	m1, _ := startMember(t, ns, "kopf@host-1", nil)
	m2, stop2 := startMember(t, ns, "kopf@host-2", nil)
	m3, _ := startMember(t, ns, "kopf@host-3", nil)
	createConfigMaps(t, ns, "cm", 30)
	logs, _ := startAssigner(t, ns, "kopf@host-1", time.Minute)
	eventually(t, "every object owned", ownedAsHashed(t, ns, 30, names(m1, m2, m3)))
	before := placements(t, ns)

	if err := stop2(); err != nil {
		t.Fatalf("the leaving member: Start() = %v", err)
	}
	eventually(t, "the leaver's objects owned by the others", ownedAsHashed(t, ns, 30, names(m1, m3)))
	for name, p := range placements(t, ns) {
		if before[name].owner != m2.Name() && p != before[name] {
			t.Errorf("%s changed though its owner stayed: %+v, was %+v", name, p, before[name])
		}
	}
	if logs.has("Asked ") {
		t.Error("the assigner asked for a handover from a member that had left")
	}
}

// A member that stops renewing without deleting its Lease keeps its
// objects until its Lease expires on the assigner's clock, then they
// get new owners directly: nobody handles them.
func TestAssignerMovesADeadMembersObjectsAfterTheLease(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	var failing atomic.Bool
	refuse := errors.New("the test's API server refuses this member")
	c, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	stalling := interceptor.NewClient(c, interceptor.Funcs{
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
	m1, _ := startMember(t, ns, "kopf@host-1", nil)
	m2, _ := startMember(t, ns, "kopf@host-2", nil)
	m3, stop3 := startMember(t, ns, "kopf@host-3", stalling)
	createConfigMaps(t, ns, "cm", 30)
	logs, _ := startAssigner(t, ns, "kopf@host-1", ringLease)
	eventually(t, "every object owned", ownedAsHashed(t, ns, 30, names(m1, m2, m3)))
	before := placements(t, ns)

	failing.Store(true)
	// Its last renewal is at most a renew period ago, so the assigner
	// counts it live for at least 1.7 s more: 1 s is safe.
	stillFor(t, time.Second, "the stalled member's objects stay", func() bool {
		return maps.Equal(before, placements(t, ns))
	})
	eventually(t, "the dead member's objects owned by the others", ownedAsHashed(t, ns, 30, names(m1, m2)))
	if logs.has("Asked ") {
		t.Error("the assigner asked a dead member for a handover")
	}
	<-m3.Fenced()
	if err := stop3(); !errors.Is(err, ring.ErrMembershipLost) {
		t.Errorf("the stalled member: Start() = %v, want %v", err, ring.ErrMembershipLost)
	}
}

// Two assigners elect one; the other takes over when it stops.
func TestAssignersElectOne(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	m1, _ := startMember(t, ns, "kopf@host-1", nil)
	m2, _ := startMember(t, ns, "kopf@host-2", nil)
	m3, _ := startMember(t, ns, "kopf@host-3", nil)
	createConfigMaps(t, ns, "cm", 30)
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
