package e2e

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/handlers"
	"github.com/kopf-go/kopf/internal/await"
	"github.com/kopf-go/kopf/test/testenv"
)

// shardRing is the ring of TestShardedDaemonsExample's operators.
const shardRing = "e2e"

// Daemon invocations, by handler and object, as the engine logs them.
var invokedRE = regexp.MustCompile(`Daemon '(background_sync|background_async)' is invoked\.\t\{.*"name": "([^"]+)"`)

// shardCopy is one copy of an example in a ring.
type shardCopy struct {
	*operator
	podID string
	// ring and leaseNS name its ring; member is its name there, learned
	// from its Lease once it has joined.
	ring, leaseNS, member string
}

// The black-box contract of sharding, with the plain 14-daemons example
// run as three processes of one ring: each object's daemons run in one
// process only; when a process is killed, its objects (and only those)
// move to the live processes once its Lease has expired, within 30 s,
// and their daemons start there; the processes that stop gracefully exit
// with 0 and delete their Leases.
func TestShardedDaemonsExample(t *testing.T) {
	ns := env.Namespace(t)
	copies := startShardCopies(t, ns, 3)
	names := make([]string, 9)
	for i := range names {
		names[i] = fmt.Sprintf("kopf-example-%d", i+1)
		obj := exampleObject(t, ns)
		obj.SetName(names[i])
		if err := env.Client.Create(context.Background(), obj); err != nil {
			t.Fatalf("create %s: %v", names[i], err)
		}
	}
	// Each daemon fails three times, a second apart, before it pings.
	shardWait(t, copies, "every object's daemons ping", 60*time.Second, func() (bool, string) {
		return pingedEverywhere(copies, names)
	})
	owners := shardOwners(t, ns)
	checkOneProcessEach(t, copies, names, owners, 0)

	victim := shardVictim(t, copies, owners)
	live := slices.DeleteFunc(slices.Clone(copies), func(c *shardCopy) bool { return c == victim })
	offsets := map[*shardCopy]int{}
	for _, c := range live {
		offsets[c] = len(c.Output())
	}
	killed := time.Now()
	victim.Kill()
	shardWait(t, live, "the killed process's objects are owned and run by live ones", 30*time.Second, func() (bool, string) {
		return movedAndRunning(t, ns, live, victim, owners, offsets)
	})
	t.Logf("the killed process's objects moved and their daemons run within %s", time.Since(killed).Round(100*time.Millisecond))
	checkMovedOnly(t, ns, live, victim, owners, offsets)

	shardCleanup(t, ns, live, names)
}

// startShardCopies starts n copies of 14-daemons in the ring, each with
// an identity of its own and its Lease in the namespace, and waits until
// the ring's assigner counts all of them.
func startShardCopies(t *testing.T, ns string, n int) []*shardCopy {
	t.Helper()
	var copies []*shardCopy
	for i := range n {
		podID := fmt.Sprintf("daemons-%d", i+1)
		copies = append(copies, startShardCopy(t, "14-daemons", podID, shardRing, ns,
			[]string{"--shard-ring=" + shardRing, "--namespace=" + ns, "--verbose"},
			[]string{"KUBECONFIG=" + kubeconfig, "POD_ID=" + podID, "POD_NAMESPACE=" + ns}))
	}
	waitForRing(t, copies)
	return copies
}

// startShardCopy runs an example as the pod podID would run it, in the
// ring whose Leases live in leaseNS; its output is logged if the test
// fails.
func startShardCopy(t *testing.T, example, podID, ring, leaseNS string, args, environ []string) *shardCopy {
	t.Helper()
	p, err := testenv.StartProcess(filepath.Join(binDir, example), args, environ)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			t.Logf("the output of %s as %s:\n%s", example, podID, p.Output())
		}
	})
	return &shardCopy{operator: &operator{p}, podID: podID, ring: ring, leaseNS: leaseNS}
}

// waitForRing waits until the ring's assigner counts every copy. Objects
// created before would be handed over once it does, and run daemons in
// two processes in turn.
func waitForRing(t *testing.T, copies []*shardCopy) {
	t.Helper()
	shardWait(t, copies, "every copy joins the ring", 60*time.Second, func() (bool, string) {
		members, err := handlers.ShardMembers(context.Background(), env.Client, copies[0].leaseNS, copies[0].ring)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range copies {
			for member, identity := range members {
				if identity == c.podID {
					c.member = member
				}
			}
			if c.member == "" {
				return false, c.podID + " has no Lease yet"
			}
		}
		return true, ""
	})
	shardWait(t, copies, "the assigner counts every member", 60*time.Second, func() (bool, string) {
		for _, c := range copies {
			for _, line := range strings.Split(c.Output(), "\n") {
				if strings.Contains(line, "The ring's members changed.") &&
					!slices.ContainsFunc(copies, func(m *shardCopy) bool { return !strings.Contains(line, `"`+m.member+`"`) }) {
					return true, ""
				}
			}
		}
		return false, "no process logged a ring of all members"
	})
}

// shardWait polls cond until it holds, failing after the timeout or as
// soon as one of the copies has exited.
func shardWait(t *testing.T, copies []*shardCopy, what string, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	await.NoneMissing(t, what, timeout, func() string {
		if ok, why := cond(); !ok {
			for _, c := range copies {
				if c.Exited() {
					t.Fatalf("%s exited (%v) while waiting until %s", c.podID, c.Err(), what)
				}
			}
			return cmp.Or(why, "not yet")
		}
		return ""
	})
}

// pingedEverywhere reports whether both daemons of every object have
// pinged, in any process.
func pingedEverywhere(copies []*shardCopy, names []string) (bool, string) {
	var all strings.Builder
	for _, c := range copies {
		all.WriteString(c.Output())
	}
	for _, name := range names {
		for _, ping := range []string{"=> Ping from a sync daemon", "=> Ping from an async daemon"} {
			if !regexp.MustCompile(regexp.QuoteMeta(ping) + `.*"name": "` + regexp.QuoteMeta(name) + `"`).MatchString(all.String()) {
				return false, fmt.Sprintf("%s: no %q yet", name, ping)
			}
		}
	}
	return true, ""
}

// invocations says which daemons were invoked for each object in the
// copy's output from the offset on.
func invocations(c *shardCopy, offset int) map[string][]string {
	out := map[string][]string{}
	for _, m := range invokedRE.FindAllStringSubmatch(c.Output()[offset:], -1) {
		if !slices.Contains(out[m[2]], m[1]) {
			out[m[2]] = append(out[m[2]], m[1])
		}
	}
	return out
}

// checkOneProcessEach asserts that each object's daemons were invoked in
// one process only, its owner's.
func checkOneProcessEach(t *testing.T, copies []*shardCopy, names []string, owners map[string]string, offset int) {
	t.Helper()
	for _, name := range names {
		var in []string
		for _, c := range copies {
			if len(invocations(c, offset)[name]) > 0 {
				in = append(in, c.podID)
			}
		}
		if len(in) != 1 || memberOf(copies, in[0]) != owners[name] {
			t.Errorf("%s: daemons invoked in %v; want in its owner %s only", name, in, owners[name])
		}
	}
}

// memberOf is the member name of the copy with the pod id.
func memberOf(copies []*shardCopy, podID string) string {
	for _, c := range copies {
		if c.podID == podID {
			return c.member
		}
	}
	return ""
}

// shardOwners reads the owner label of every object in the namespace,
// which holds the ring's Leases too.
func shardOwners(t *testing.T, ns string) map[string]string {
	t.Helper()
	return ringOwners(t, ns, ns, shardRing)
}

// ringOwners reads the owner label of the ring (its Leases in leaseNS)
// of every object in the namespace ns.
func ringOwners(t *testing.T, ns, leaseNS, ring string) map[string]string {
	t.Helper()
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion("kopf.dev/v1")
	list.SetKind("KopfExampleList")
	if err := env.Client.List(context.Background(), list, client.InNamespace(ns)); err != nil {
		t.Fatalf("list the objects: %v", err)
	}
	owners := map[string]string{}
	for _, obj := range list.Items {
		owners[obj.GetName()] = obj.GetLabels()[handlers.ShardOwnerLabel(leaseNS, ring)]
	}
	return owners
}

// shardVictim picks the copy to kill: the one with the most objects among
// those that are not the ring's assigner. Killing the assigner would test
// its re-election too, which takes another lease duration or two.
func shardVictim(t *testing.T, copies []*shardCopy, owners map[string]string) *shardCopy {
	t.Helper()
	counts := map[string]int{}
	for _, m := range owners {
		counts[m]++
	}
	var victim *shardCopy
	for _, c := range copies {
		if strings.Contains(c.Output(), "This replica is the ring's assigner.") {
			continue
		}
		if victim == nil || counts[c.member] > counts[victim.member] {
			victim = c
		}
	}
	if victim == nil || counts[victim.member] == 0 {
		t.Fatalf("no process but the assigner owns an object: %v", counts)
	}
	t.Logf("killing %s, which owns %d of %d objects", victim.podID, counts[victim.member], len(owners))
	return victim
}

// movedAndRunning reports whether every object of the victim is owned by
// a live copy, and both its daemons were invoked there after the kill.
func movedAndRunning(t *testing.T, ns string, live []*shardCopy, victim *shardCopy, before map[string]string,
	offsets map[*shardCopy]int) (bool, string) {
	now := shardOwners(t, ns)
	for _, name := range slices.Sorted(maps.Keys(before)) {
		if before[name] != victim.member {
			continue
		}
		i := slices.IndexFunc(live, func(c *shardCopy) bool { return c.member == now[name] })
		if i < 0 {
			return false, fmt.Sprintf("%s is owned by %q, no live process", name, now[name])
		}
		if ids := invocations(live[i], offsets[live[i]])[name]; len(ids) < 2 {
			return false, fmt.Sprintf("%s: daemons %v invoked in %s since the kill, want both", name, ids, live[i].podID)
		}
	}
	return true, ""
}

// checkMovedOnly asserts that only the victim's objects moved, and that
// since the kill, daemons were invoked for them in their new owner only,
// and for no other object.
func checkMovedOnly(t *testing.T, ns string, live []*shardCopy, victim *shardCopy, before map[string]string,
	offsets map[*shardCopy]int) {
	t.Helper()
	now := shardOwners(t, ns)
	for name, was := range before {
		if was != victim.member && now[name] != was {
			t.Errorf("%s moved from %s to %s, though its owner lives", name, was, now[name])
		}
		for _, c := range live {
			ids := invocations(c, offsets[c])[name]
			if len(ids) > 0 && (was != victim.member || c.member != now[name]) {
				t.Errorf("%s: daemons %v invoked in %s since the kill; its owner was %s, is %s",
					name, ids, c.podID, was, now[name])
			}
		}
	}
	for _, c := range live {
		if strings.Contains(c.Output(), "shard membership lost") {
			t.Errorf("%s lost its membership", c.podID)
		}
	}
}

// shardCleanup deletes the objects (their owners let the deletions
// finish), stops the live copies with SIGTERM, which must exit with 0,
// and checks that their Leases are gone.
func shardCleanup(t *testing.T, ns string, live []*shardCopy, names []string) {
	t.Helper()
	deleteAndStop(t, ns, live, names, ns, shardRing)
}

// deleteAndStop deletes the objects and waits until they are gone, then
// stops the copies gracefully, and checks that their Leases (in leaseNS)
// are released (or already deleted by the assigner), since nothing of
// theirs ran any more.
func deleteAndStop(t *testing.T, ns string, live []*shardCopy, names []string, leaseNS, ring string) {
	t.Helper()
	ctx := context.Background()
	for _, name := range names {
		obj := newObject()
		obj.SetNamespace(ns)
		obj.SetName(name)
		if err := env.Client.Delete(ctx, obj); err != nil {
			t.Fatalf("delete %s: %v", name, err)
		}
	}
	shardWait(t, live, "every object is gone", 60*time.Second, func() (bool, string) {
		left := ringOwners(t, ns, leaseNS, ring)
		return len(left) == 0, fmt.Sprintf("%d objects left", len(left))
	})
	for _, c := range live {
		c.stop(t)
	}
	// A released Lease stays a while, for assigners that start meanwhile
	// to see the release; ShardMembers leaves released ones out.
	members, err := handlers.ShardMembers(ctx, env.Client, leaseNS, ring)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range live {
		if _, held := members[c.member]; held {
			t.Errorf("the Lease of %s is held after its graceful stop, want it released", c.podID)
		}
	}
}
