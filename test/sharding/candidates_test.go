package sharding

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/internal/await"
	"github.com/kopf-go/kopf/internal/ring"
	"github.com/kopf-go/kopf/pkg/kopftest"
)

// Only the ring's three oldest members follow every member's Lease and
// campaign to be its assigner (docs/sharding.md, "Candidates"); the
// others watch the epoch and the election alone, and receive no event of
// a member's Lease. When the three die at once, the others find that
// nobody renews the election, stand as candidates, and one of them takes
// the dead members' objects over.
func TestOnlyTheCandidatesFollowTheLeases(t *testing.T) {
	kopftest.NoLeaks(t)
	r := newRing(t)
	replicas := []string{"a", "b", "c", "d", "e"}
	names := r.startSettled(replicas, 20, time.Minute)
	candidates := r.candidates()
	if len(candidates) != ring.DefaultCandidates {
		t.Fatalf("the epoch names the candidates %v, want %d of them", candidates, ring.DefaultCandidates)
	}
	await.NoneMissing(t, "only the candidates follow the ring's Leases", 30*time.Second, func() string {
		var following []string
		for _, name := range replicas {
			if follows, _ := r.replicas[name].cut.followsLeases(); follows {
				following = append(following, name)
			}
		}
		if !slices.Equal(following, candidates) {
			return fmt.Sprintf("%v follow, want the candidates %v", following, candidates)
		}
		return ""
	})
	// Over eight renew periods, every member renews eight times: the
	// candidates hear of each renewal, the others of none.
	before := map[string]int{}
	for _, name := range replicas {
		_, before[name] = r.replicas[name].cut.followsLeases()
	}
	time.Sleep(8 * renewPeriod)
	for _, name := range replicas {
		_, after := r.replicas[name].cut.followsLeases()
		got := after - before[name]
		switch candidate := slices.Contains(candidates, name); {
		case candidate && got < 8:
			t.Errorf("the candidate %s received %d events of members' Leases in eight renew periods, want at least one per renewal of a member", name, got)
		case !candidate && got != 0:
			t.Errorf("%s, no candidate, received %d events of members' Leases", name, got)
		}
	}

	for _, name := range candidates {
		r.replicas[name].cut.cutOff()
	}
	for _, name := range candidates {
		r.crash(name)
	}
	r.waitSettled(names, 2*time.Minute)
	survivors := slices.DeleteFunc(slices.Clone(replicas), func(name string) bool { return slices.Contains(candidates, name) })
	if got := r.candidates(); !slices.Equal(got, survivors) {
		t.Errorf("after the candidates died, the epoch names the candidates %v, want the survivors %v", got, survivors)
	}
	for _, name := range survivors {
		if follows, _ := r.replicas[name].cut.followsLeases(); !follows {
			t.Errorf("the survivor %s, a candidate now, does not follow the ring's Leases", name)
		}
	}
}

// candidates are the replicas that the ring's epoch names candidates,
// sorted.
func (r *testRing) candidates() []string {
	r.t.Helper()
	var lease coordinationv1.Lease
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: r.leases(), Name: ring.EpochLease(r.ringName())}, &lease); err != nil {
		r.t.Fatal(err)
	}
	var out []string
	for _, m := range ring.Published(&lease).Candidates(ring.DefaultCandidates) {
		out = append(out, r.replicaOf(m))
	}
	slices.Sort(out)
	return out
}
