package sharding

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kopf-go/kopf/handlers"
	"github.com/kopf-go/kopf/pkg/cause"
	"github.com/kopf-go/kopf/pkg/kopftest"
)

// A replica whose graceful stop has begun takes no new object, while
// what it holds stays with it until it is gone (docs/sharding.md,
// "Leaving"). Its daemon ignores the stop, so the replica's stop lasts
// its shutdown grace (5 s here), during which it renews its Lease, and
// then it leaves the Lease to expire: with the library's durations, the
// ring counts it a member for about 20 s after the stop began. Objects
// created while it stops go to the other replica and run there at once;
// before, half of them took the stopping member's name and waited for
// its Lease to run out.
func TestAStoppingReplicaTakesNoNewObject(t *testing.T) {
	kopftest.NoLeaks(t)
	r := newRing(t)
	r.libraryDurations = true
	release := stubbornOn(t, r, "a")
	r.start("a")
	r.start("b")
	first := r.createObjects(8)
	r.waitCreates(first)
	r.ownedBy("a", first) // fails the test if a holds none: its stubborn daemon keeps its stop going

	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		r.replicas["a"].op.Stop(t)
	}()
	kopftest.Eventually(t, "the epoch says a stops", 10*time.Second, func() bool {
		return slices.Contains(r.epoch().Stopping, r.member("a"))
	})
	select {
	case <-stopped:
		t.Fatal("the epoch said that a stops only once its stop had ended")
	default:
	}

	later := make([]string, 16)
	for i := range later {
		later[i] = fmt.Sprintf("later-%02d", i)
	}
	r.createNamed(later)
	owners := map[string]string{}
	kopftest.Eventually(t, "every new object has an owner", 10*time.Second, func() bool {
		for _, name := range later {
			obj := r.object(name)
			if err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: r.ns, Name: name}, obj); err != nil {
				return false
			}
			owners[name] = obj.GetLabels()[r.keys().Owner]
			if owners[name] == "" {
				return false
			}
		}
		return true
	})
	select {
	case <-stopped:
		t.Fatal("a's stop ended before the new objects were placed, so this tested nothing")
	default:
	}
	for name, owner := range owners {
		if owner != r.member("b") {
			t.Errorf("%s was placed on %s, want b (%s): a (%s) was stopping", name, owner, r.member("b"), r.member("a"))
		}
	}
	r.waitCreates(later)
	if e := r.epoch(); !slices.Contains(e.Members, r.member("a")) {
		t.Errorf("the new objects ran only once a had left: %+v", e)
	}
	for _, name := range later {
		if got := r.det.creates(name); !slices.Equal(got, []string{"b"}) {
			t.Errorf("%s was created on %v, want b alone", name, got)
		}
	}
	release()
	<-stopped
	if o := r.det.overlapping(); len(o) > 0 {
		t.Errorf("overlaps: %v", o)
	}
}

// A replica whose graceful stop has begun gains nothing from a death
// (chaos run 12, test/faults/README.md): its workers have stopped, so
// what a dead adopter held goes to the adopters that go on. Here d
// crashes and a, b and c adopt its objects, which keep d's name (their
// writes to objects are refused, so nothing is claimed). Then b begins
// to stop, held up by a daemon that ignores it, and a crashes: the
// objects of d that a adopted, and a's own, all run on c while b is
// still a member of the ring. Before, about half of them went to b and
// waited until b was gone.
func TestAStoppingReplicaGainsNothingFromADeath(t *testing.T) {
	kopftest.NoLeaks(t)
	r := newRing(t)
	r.grace = 25 * time.Second
	release := stubbornOn(t, r, "b")
	names := r.startSettled([]string{"a", "b", "c", "d"}, 80, time.Minute)
	r.waitCreates(names)
	ofD, ofA := r.ownedBy("d", names), r.ownedBy("a", names)
	r.ownedBy("b", names) // b must hold some: its stubborn daemon keeps its stop going

	for _, name := range []string{"a", "b", "c"} {
		r.replicas[name].cut.refuseWrites(true)
	}
	r.crash("d")
	dead := r.member("d")
	kopftest.Eventually(t, "d's objects run on their adopters", time.Minute, func() bool {
		e := r.epoch()
		if !e.IsRetired(dead) {
			return false
		}
		for _, name := range ofD {
			if hosts := r.det.daemonHosts(name); len(hosts) != 1 || r.member(hosts[0]) != e.Adopter(r.hashKey(name), dead) {
				return false
			}
		}
		return true
	})
	var fromA []string // d's objects that a adopted
	for _, name := range ofD {
		if hosts := r.det.daemonHosts(name); slices.Equal(hosts, []string{"a"}) {
			fromA = append(fromA, name)
		}
	}
	if len(fromA) == 0 {
		t.Fatal("a adopted none of d's objects: this tests nothing")
	}

	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		r.replicas["b"].op.Stop(t)
	}()
	stopping := r.member("b")
	kopftest.Eventually(t, "the epoch records b's stop", 10*time.Second, func() bool {
		_, ok := r.epoch().Stopped[stopping]
		return ok
	})
	if e := r.epoch(); !e.Adopts(dead, stopping) {
		t.Fatalf("b holds none of d's buckets: this tests nothing (%v)", e.Held)
	}
	crashed := time.Now()
	r.crash("a")
	second := r.member("a")
	moved := slices.Concat(fromA, ofA)
	kopftest.Eventually(t, "the objects that a held run on c", time.Minute, func() bool {
		if !r.epoch().IsRetired(second) {
			return false
		}
		for _, name := range moved {
			if hosts := r.det.daemonHosts(name); !slices.Equal(hosts, []string{"c"}) {
				return false
			}
		}
		return true
	})
	e := r.epoch()
	if !slices.Contains(e.Members, stopping) {
		t.Fatal("b left the ring before the objects ran on c: this tests nothing")
	}
	select {
	case <-stopped:
		t.Fatal("b's stop ended before the objects ran on c: this tests nothing")
	default:
	}
	t.Logf("%d objects that a held (%d of d's, %d of its own) run on c %s after a's crash, while b stops",
		len(moved), len(fromA), len(ofA), time.Since(crashed).Round(100*time.Millisecond))
	for _, name := range fromA {
		if got := e.Adopter(r.hashKey(name), dead); got != r.member("c") {
			t.Errorf("%s of d is adopted by %q, want c (%s)", name, got, r.member("c"))
		}
	}
	release()
	<-stopped
	r.replicas["c"].cut.refuseWrites(false)
	if o := r.det.overlapping(); len(o) > 0 {
		t.Errorf("overlaps: %v", o)
	}
}

// stubbornOn gives the replica a daemon that ignores its stop until the
// returned release is called, or the test's cleanup calls it (before the
// leak check: the daemon returns).
func stubbornOn(t *testing.T, r *testRing, replica string) (release func()) {
	released := make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(released) }) }
	t.Cleanup(release)
	r.register = func(_ *handlers.Registry, res *handlers.Resource[*unstructured.Unstructured], name string) {
		if name != replica {
			return
		}
		handlers.Daemon(res, "stubborn", func(ctx context.Context, _ *unstructured.Unstructured, d *cause.Daemon) (any, error) {
			<-d.Stopped()
			<-released // ignores its stop
			return nil, nil
		})
	}
	return release
}
