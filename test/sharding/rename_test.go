package sharding

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kopf-go/kopf/internal/await"
	"github.com/kopf-go/kopf/internal/ring"
	"github.com/kopf-go/kopf/pkg/kopftest"
)

// A ring renamed in a rolling update (docs/sharding.md, "Renaming a ring,
// or moving its Leases"): the new ring's replica starts while the old
// ring's member still holds the objects, and takes none of them while
// that member is live (without the check, its assigner placed every
// object at once and both rings ran their handlers). Once the old member
// has stopped gracefully, the new ring takes every object, and the old
// ring's keys are gone from them.
func TestARenamedRingTakesNoObjectTheOldRingHolds(t *testing.T) {
	kopftest.NoLeaks(t)
	old, renamed := renamedRings(t, "", "")
	names := rollOver(t, old, renamed, 20)
	old.stop("old-a")
	takenOver(t, old, renamed, names, 20*time.Second)

	// A rollback is refused the same way: the old ring's new member takes
	// nothing while the new ring's member holds the objects.
	old.start("old-b")
	holdsOff(t, old, "old-b")
	if o := old.det.overlapping(); len(o) > 0 {
		t.Errorf("overlapping executions: %v", o)
	}
}

// An old ring of two members: the new ring takes nothing while either is
// live, not even the objects of the one that left first (the other takes
// them over, by a placement or an adoption), and everything once both
// are gone.
func TestARenamedRingWaitsForTheWholeOldRing(t *testing.T) {
	kopftest.NoLeaks(t)
	old, renamed := renamedRings(t, "", "")
	old.start("old-b")
	names := rollOver(t, old, renamed, 20)
	old.stop("old-a")
	old.waitSettled(names, time.Minute)
	holdsOff(t, renamed, "new-a")
	old.stop("old-b")
	takenOver(t, old, renamed, names, 20*time.Second)
}

// The same with the old ring's member killed: its Lease stays behind,
// unrenewed, and the new ring takes the objects once that Lease has
// expired (by the new ring's clock) and the new ring has deleted it on the
// condition that it is unchanged.
func TestARenamedRingTakesAKilledMembersObjectsOnceItsLeaseExpires(t *testing.T) {
	kopftest.NoLeaks(t)
	old, renamed := renamedRings(t, "", "")
	names := rollOver(t, old, renamed, 20)
	lease := old.memberLease("old-a")
	crashed := time.Now() // crash returns once the member has fenced itself
	old.crash("old-a")
	takenOver(t, old, renamed, names, 20*time.Second)
	if took := time.Since(crashed); took < renewDeadline {
		t.Errorf("the objects moved %v after the old member was cut off, before its renew deadline", took)
	}
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(lease), &coordinationv1.Lease{}); err == nil {
		t.Errorf("the killed member's expired Lease %s is still there", lease.Name)
	}
}

// The same with the old member's Lease deleted by hand while it runs: the
// member fences itself at its next renewal, and the new ring, which saw
// the Lease live, takes the objects once that lease has run out, not at
// the deletion.
func TestARenamedRingWaitsOutADeletedLease(t *testing.T) {
	kopftest.NoLeaks(t)
	old, renamed := renamedRings(t, "", "")
	names := rollOver(t, old, renamed, 10)
	if err := env.Client.Delete(context.Background(), old.memberLease("old-a")); err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	if err := old.replicas["old-a"].op.Exited(t); !errors.Is(err, ring.ErrLeaseDeleted) {
		t.Errorf("the old member whose Lease was deleted exited with %v, want %v", err, ring.ErrLeaseDeleted)
	}
	delete(old.replicas, "old-a")
	takenOver(t, old, renamed, names, 20*time.Second)
	// The new ring counts the member live for a lease duration after it
	// first saw the Lease's last version: that version is at most a
	// renew period old, and the read of it is reused for one more. So
	// nothing moves sooner than the lease duration less two renew
	// periods after the deletion (less the deletion's own round trip,
	// since the clock starts when it returns).
	if took, least := time.Since(deleted), leaseDuration-2*renewPeriod-deleteLatency; took < least {
		t.Errorf("the objects moved %v after the old member's Lease was deleted, before %v", took, least)
	}
}

// deleteLatency bounds the round trip of a deletion on the loaded test
// machine, which the clock of a test that starts at its answer misses.
const deleteLatency = 100 * time.Millisecond

// A ring whose Leases move to another namespace, its name unchanged, is
// another ring too (its keys carry the namespace): the same rollout, the
// same refusal, the same takeover.
func TestARingWhoseLeasesMovedTakesNoObjectTheOldRingHolds(t *testing.T) {
	kopftest.NoLeaks(t)
	old, moved := renamedRings(t, ringName, env.Namespace(t))
	names := rollOver(t, old, moved, 20)
	old.stop("old-a")
	takenOver(t, old, moved, names, 20*time.Second)
}

// renamedRings are two rings that serve one namespace and record into one
// detector: the old one, named "old" with its Leases there, and the new
// one, named name ("new" if empty) with its Leases in leaseNS (there too
// if empty).
func renamedRings(t *testing.T, name, leaseNS string) (old, renamed *testRing) {
	old = newRing(t)
	old.name = "old"
	if name != "" {
		old.name = name
	}
	renamed = newRing(t)
	renamed.ns, renamed.det = old.ns, old.det
	renamed.name, renamed.leaseNS = "new", leaseNS
	if name != "" {
		renamed.name = name
	}
	return old, renamed
}

// rollOver starts the old ring's member, has it settle with n objects,
// then starts the new ring's member beside it (a rolling update's surge),
// and checks that for two lease durations and more the new ring takes
// none of the objects, and none of its handlers runs, while the old ring
// keeps them.
func rollOver(t *testing.T, old, renamed *testRing, n int) []string {
	t.Helper()
	old.start("old-a")
	names := old.createObjects(n)
	old.waitSettled(names, time.Minute)
	renamed.start("new-a")
	holdsOff(t, renamed, "new-a")
	if ok, why := old.settled(names); !ok {
		t.Errorf("the old ring did not keep its objects: %s", why)
	}
	kopftest.Eventually(t, "the new ring says which ring holds the objects", 10*time.Second, func() bool {
		for _, m := range renamed.replicas["new-a"].op.Logs.Messages("are held by the ring") {
			if strings.Contains(m, fmt.Sprintf("the ring %q in the namespace %s", old.ringName(), old.leases())) {
				return true
			}
		}
		return false
	})
	return names
}

// holdsOff checks, for two lease durations and more, that the ring r,
// whose replica is started while another ring holds every object of the
// namespace, places none of them and runs no handler on that replica.
func holdsOff(t *testing.T, r *testRing, replica string) {
	t.Helper()
	for end := time.Now().Add(2*leaseDuration + time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		for _, obj := range objectsOf(t, r.ns) {
			if p := r.keys().Placement(obj.GetLabels(), obj.GetAnnotations()); p.Owner != "" || p.Granted != "" {
				t.Fatalf("%s was placed in the ring %q (owner %q, granted %q) while another ring's member holds it", obj.GetName(), r.ringName(), p.Owner, p.Granted)
			}
		}
		if ran := r.det.ranOn(replica); len(ran) > 0 {
			t.Fatalf("handlers ran on %s while another ring's member holds the objects: %v", replica, ran)
		}
	}
}

// takenOver waits until every object is the new ring's, with its daemon
// there, and carries none of the old ring's keys; no execution ever
// overlapped.
func takenOver(t *testing.T, old, renamed *testRing, names []string, timeout time.Duration) {
	t.Helper()
	oldKeys := old.keys()
	await.NoneMissing(t, "the new ring takes every object", timeout, func() string {
		objs := objectsOf(t, old.ns)
		if len(objs) != len(names) {
			return fmt.Sprintf("%d objects, want %d", len(objs), len(names))
		}
		for _, obj := range objs {
			p := renamed.keys().Placement(obj.GetLabels(), obj.GetAnnotations())
			if want := renamed.member("new-a"); p.Owner != want || p.Granted != want {
				return fmt.Sprintf("%s: owner %q, granted %q in the new ring, want %s", obj.GetName(), p.Owner, p.Granted, want)
			}
			if hosts := old.det.daemonHosts(obj.GetName()); len(hosts) != 1 || hosts[0] != "new-a" {
				return fmt.Sprintf("%s has daemons on %v", obj.GetName(), hosts)
			}
		}
		return ""
	})
	for _, obj := range objectsOf(t, old.ns) {
		for _, k := range []string{oldKeys.Owner, oldKeys.Granted, oldKeys.Next} {
			if v, ok := obj.GetLabels()[k]; ok {
				t.Errorf("%s keeps the old ring's label %s=%s", obj.GetName(), k, v)
			}
			if v, ok := obj.GetAnnotations()[k]; ok {
				t.Errorf("%s keeps the old ring's annotation %s=%s", obj.GetName(), k, v)
			}
		}
	}
	if o := old.det.overlapping(); len(o) > 0 {
		t.Errorf("overlapping executions: %v", o)
	}
}

// objectsOf are the KopfExamples of a namespace.
func objectsOf(t *testing.T, ns string) []unstructured.Unstructured {
	t.Helper()
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion("kopf.dev/v1")
	list.SetKind("KopfExampleList")
	if err := env.Client.List(context.Background(), list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// memberLease is a replica's member Lease, as a key to read or delete it.
func (r *testRing) memberLease(name string) *coordinationv1.Lease {
	return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: r.leases(), Name: "kopf-shard-" + r.ringName() + "-" + r.member(name)}}
}

// ranOn are the objects of which any execution ever started on the
// replica.
func (d *detector) ranOn(replica string) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for obj, by := range d.running {
		if _, ok := by[replica]; ok {
			out = append(out, obj)
		}
	}
	return out
}

// A ring whose Leases moved, and whose replicas may not read the Leases
// of the old namespace, cannot tell whether the old ring's members are
// gone: it takes none of their objects, says which permission it needs,
// also once the old ring has stopped, and takes them once it has the
// permission.
func TestARingThatMayNotReadTheOldRingsLeasesTakesNothing(t *testing.T) {
	kopftest.NoLeaks(t)
	old, moved := renamedRings(t, ringName, env.Namespace(t))
	user, config := ringUser(t, old.ns, moved.leases())
	moved.config = config
	old.start("old-a")
	names := old.createObjects(10)
	old.waitSettled(names, time.Minute)
	moved.start("new-a")
	holdsOff(t, moved, "new-a")
	want := fmt.Sprintf("It needs get and delete on leases (coordination.k8s.io) in the namespace %s", old.leases())
	if n := len(moved.replicas["new-a"].op.Logs.Messages(want)); n != 1 {
		t.Errorf("the missing permission was logged %d times, want once", n)
	}
	old.stop("old-a")
	holdsOff(t, moved, "new-a")

	grant(t, user, old.leases(), rbacv1.PolicyRule{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "delete"}})
	takenOver(t, old, moved, names, 20*time.Second)
}

// ringUser is a user of the control plane that may do what a ring's
// replica needs: work with the example objects and post events in ns,
// and keep its Leases in leaseNS.
// It returns the user's name and configuration.
func ringUser(t *testing.T, ns, leaseNS string) (string, *rest.Config) {
	t.Helper()
	user := "ring-" + leaseNS
	authenticated, err := env.Environment().AddUser(envtest.User{Name: user}, nil)
	if err != nil {
		t.Fatal(err)
	}
	grant(t, user, ns,
		rbacv1.PolicyRule{APIGroups: []string{"kopf.dev"}, Resources: []string{"kopfexamples", "kopfexamples/status"}, Verbs: []string{"*"}},
		rbacv1.PolicyRule{APIGroups: []string{"", "events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}})
	grant(t, user, leaseNS, rbacv1.PolicyRule{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"*"}})
	return user, authenticated.Config()
}

// grant gives the user the rules in the namespace, by a Role and its
// binding of their own.
func grant(t *testing.T, user, ns string, rules ...rbacv1.PolicyRule) {
	t.Helper()
	name := fmt.Sprintf("%s-%d", user, time.Now().UnixNano())
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Rules: rules}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name},
		Subjects: []rbacv1.Subject{{Kind: "User", Name: user}}}
	for _, o := range []client.Object{role, binding} {
		if err := env.Client.Create(context.Background(), o); err != nil {
			t.Fatal(err)
		}
	}
}
