package sharding

import (
	"context"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/pkg/kopftest"
)

// Three replicas share 300 objects: each object's create handler runs
// once in all, its daemon on one replica only, and no replica has more
// than twice the mean. A fourth replica then takes about a quarter, and
// only objects that hash to it move; a replica that leaves gives its
// objects to the others; and every deletion completes. Nothing ever runs
// for one object on two replicas at once.
func TestRingShares300(t *testing.T) {
	kopftest.NoLeaks(t)
	r := newRing(t)
	names := r.startSettled([]string{"a", "b", "c"}, 300, 2*time.Minute)
	r.waitCreates(names)
	for _, name := range names {
		if got := r.det.creates(name); len(got) != 1 {
			t.Errorf("%s: create handler ran on %v, want once", name, got)
		}
	}
	before, _, _ := r.owners()
	perMember := map[string]int{}
	for _, m := range before {
		perMember[m]++
	}
	for m, n := range perMember {
		if n > 2*300/3 {
			t.Errorf("replica %s owns %d objects, more than twice the mean of 100", r.replicaOf(m), n)
		}
	}
	t.Logf("3 replicas: %v objects each", perMember)

	t.Run("a fourth replica takes a quarter", func(t *testing.T) {
		r.start("d")
		r.waitSettled(names, time.Minute)
		after, _, _ := r.owners()
		moved := 0
		for _, name := range names {
			if after[name] == before[name] {
				continue
			}
			moved++
			if after[name] != r.member("d") {
				t.Errorf("%s moved from %s to %s, not to the new replica", name, r.replicaOf(before[name]), r.replicaOf(after[name]))
			}
		}
		// Which objects move is exact (checked above and by the settling:
		// those that hash to the new replica, and only they). How many is
		// a draw: each of 300 random uids hashes to the newcomer with a
		// chance of 1/4, so the count is binomial, 75 ± 7.5 at one
		// standard deviation; ±10 % of 75 is that band, which a stateless
		// hash meets in about 7 runs of 10. Four deviations (45 to 105)
		// fail a working ring once in 10,000 runs, and catch a hash that
		// gives the newcomer nothing, or everything. The spread of the
		// hash itself, ±10 % over 3,000 uids, is a unit test of
		// internal/sharding.
		if moved < 45 || moved > 105 {
			t.Errorf("%d objects moved to the fourth replica, want 75 ± 30 (four standard deviations)", moved)
		}
		t.Logf("the fourth replica took %d objects", moved)
		for _, name := range names {
			if got := r.det.creates(name); len(got) != 1 {
				t.Errorf("%s: create handler ran on %v after the move, want once", name, got)
			}
		}
	})

	t.Run("a replica that leaves gives its objects to the others", func(t *testing.T) {
		owned, _, _ := r.owners()
		r.stop("b")
		r.waitSettled(names, time.Minute)
		after, _, _ := r.owners()
		for _, name := range names {
			if owned[name] != r.member("b") && after[name] != owned[name] {
				t.Errorf("%s moved from %s, which did not leave", name, r.replicaOf(owned[name]))
			}
		}
	})

	t.Run("every deletion completes", func(t *testing.T) {
		r.parallel(names, func(name string) error {
			return client.IgnoreNotFound(env.Client.Delete(context.Background(), r.object(name)))
		})
		kopftest.Eventually(t, "every object is gone", time.Minute, func() bool {
			for _, name := range names {
				err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(r.object(name)), r.object(name))
				if !apierrors.IsNotFound(err) {
					return false
				}
			}
			return true
		})
		for _, name := range names {
			if n := r.det.deletions(name); n != 1 {
				t.Errorf("%s: delete handler succeeded %d times, want once", name, n)
			}
			if hosts := r.det.daemonHosts(name); len(hosts) > 0 {
				t.Errorf("%s: daemons still run on %v after the deletion", name, hosts)
			}
		}
	})

	if o := r.det.overlapping(); len(o) > 0 {
		t.Errorf("%d overlapping executions, e.g. %s", len(o), o[0])
	}
}
