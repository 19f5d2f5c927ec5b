package sharding

import (
	"context"
	"slices"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kopf-go/kopf/internal/ring"
	"github.com/kopf-go/kopf/internal/sharding"
	"github.com/kopf-go/kopf/pkg/kopftest"
)

// A crashed replica's objects are adopted, not moved: once the assigner
// counts it dead, it retires it on the ring's epoch, and each object's
// daemon starts on its adopter while the object still carries the dead
// member's name. The survivors' writes to objects are refused meanwhile,
// so the takeover cannot have waited for one. Once writes go through
// again, the adopters claim the objects (their owner labels move), and the
// assigner drops the dead member from the epoch. Before that, while no
// write goes through yet, one adopter crashes too: the objects it had
// adopted, which still carry the first member's name, run on the last
// replica at once, with its own. Nothing runs for one object on two
// replicas at once.
func TestACrashedReplicasObjectsAreAdoptedBeforeAnyWrite(t *testing.T) {
	kopftest.NoLeaks(t)
	r := newRing(t)
	for _, name := range []string{"a", "b", "c"} {
		r.start(name)
	}
	names := r.createObjects(60)
	r.waitSettled(names, time.Minute)
	// A create handler still under way at the crash, whose outcome the
	// survivors cannot write, would run again (at least once).
	r.waitCreates(names)
	owned, _, _ := r.owners()
	var adopted []string
	for _, name := range names {
		if owned[name] == r.member("a") {
			adopted = append(adopted, name)
		}
	}
	if len(adopted) == 0 {
		t.Fatal("the replica to crash owns nothing; the test shows nothing")
	}

	r.replicas["b"].cut.refuseWrites(true)
	r.replicas["c"].cut.refuseWrites(true)
	crashed := time.Now()
	r.crash("a")
	dead := r.member("a")
	kopftest.Eventually(t, "every object of the crashed replica has its daemon on its adopter", time.Minute, func() bool {
		e := r.epoch()
		if !e.IsRetired(dead) {
			return false
		}
		for _, name := range adopted {
			hosts := r.det.daemonHosts(name)
			if len(hosts) != 1 || r.member(hosts[0]) != e.Adopter(r.hashKey(name), dead) {
				return false
			}
		}
		return true
	})
	t.Logf("the crashed replica's %d objects run on their adopters %s after the crash (lease duration %s)",
		len(adopted), time.Since(crashed).Round(100*time.Millisecond), leaseDuration)
	now, _, _ := r.owners()
	for _, name := range adopted {
		if now[name] != dead {
			t.Errorf("%s is labelled %q though the survivors could write nothing, want the dead member %q", name, now[name], dead)
		}
	}

	// The second crash, while nothing could be claimed.
	crashed = time.Now()
	r.crash("b")
	second := r.member("b")
	kopftest.Eventually(t, "every object has its daemon on the last replica", time.Minute, func() bool {
		e := r.epoch()
		if !e.IsRetired(second) {
			return false
		}
		for _, name := range names {
			if hosts := r.det.daemonHosts(name); len(hosts) != 1 || hosts[0] != "c" {
				return false
			}
		}
		return true
	})
	t.Logf("after the second crash, every object runs on the last replica %s later", time.Since(crashed).Round(100*time.Millisecond))
	now, _, _ = r.owners()
	for _, name := range adopted {
		if now[name] != dead {
			t.Errorf("%s is labelled %q though nothing could be claimed, want the first dead member %q", name, now[name], dead)
		}
	}
	refused := r.replicas["c"].cut.refuseWrites(false)
	t.Logf("the survivors' writes to objects refused meanwhile: %d", refused)

	r.waitSettled(names, time.Minute)
	kopftest.Eventually(t, "the dead members dropped from the epoch", time.Minute, func() bool {
		e := r.epoch()
		return !e.IsRetired(dead) && !e.IsRetired(second) && slices.Equal(e.Members, sortedMembers(r.liveMembers()))
	})
	for _, name := range names {
		if got := r.det.creates(name); len(got) != 1 {
			t.Errorf("%s: create handler ran on %v, want once", name, got)
		}
	}
	if o := r.det.overlapping(); len(o) > 0 {
		t.Errorf("%d overlapping executions, e.g. %s", len(o), o[0])
	}
}

// epoch is the ring's epoch as its Lease holds it now.
func (r *testRing) epoch() sharding.Epoch {
	r.t.Helper()
	lease := &coordinationv1.Lease{}
	if err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: r.ns, Name: ring.EpochLease(ringName)}, lease); err != nil {
		return sharding.Epoch{}
	}
	return ring.Published(lease)
}

// sortedMembers is a sorted copy.
func sortedMembers(ms []string) []string {
	out := slices.Clone(ms)
	slices.Sort(out)
	return out
}
