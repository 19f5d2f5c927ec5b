package bench

import (
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kopf-go/kopf/test/bench/internal/requests"
)

// BenchmarkShardLeaseTraffic's knobs: the ring sizes, and how long each
// is measured at rest.
var (
	leaseRings  = flag.String("shard-lease-replicas", "4,8,16", "BenchmarkShardLeaseTraffic: numbers of replicas, comma-separated")
	leaseWindow = flag.Duration("shard-lease-window", 30*time.Second, "BenchmarkShardLeaseTraffic: how long each ring is measured at rest")
)

// BenchmarkShardLeaseTraffic measures what a ring at rest, without
// objects, costs in Leases: the Lease events that each replica's watches
// receive and its requests for Leases, by verb, a second, over a window
// that begins once every replica has joined and the candidates have
// settled (docs/sharding.md, "Candidates"). Every replica is a process
// of the quick start's shape, at the library's durations.
func BenchmarkShardLeaseTraffic(b *testing.B) {
	setup(b)
	for _, field := range strings.Split(*leaseRings, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(field))
		if err != nil || n < 1 {
			b.Fatalf("-shard-lease-replicas: %q is no number of replicas", field)
		}
		b.Run(fmt.Sprintf("replicas=%d", n), func(b *testing.B) {
			for range b.N {
				f := leaseTraffic(b, n, *leaseWindow)
				b.ReportMetric(f.events, "lease-events/s")
				b.ReportMetric(f.mostEvents, "lease-events/s/replica-max")
				b.ReportMetric(f.reads, "lease-reads/s")
				b.ReportMetric(f.writes, "lease-writes/s")
			}
		})
	}
}

// leaseFigures are a ring's Lease traffic at rest, a second: events its
// watches received in all, at the replica that received the most and at
// each, and its reads (gets and lists) and writes of Leases in all;
// watches counts the Lease watches opened in the window.
type leaseFigures struct {
	events, mostEvents, reads, writes float64
	perReplica                        []float64
	watches                           int
}

// leaseTraffic starts a ring of n replicas and measures it at rest for
// window.
func leaseTraffic(tb testing.TB, n int, window time.Duration) leaseFigures {
	tb.Helper()
	ns := fixtures.env.Namespace(tb)
	r := newBenchRing(tb, ns, "--count-events")
	r.start(n)
	// The epoch names the candidates once every replica joined; the
	// others stop following within a watch event, and the start's grace
	// of a replica that has not seen the election renewed is 2 s.
	time.Sleep(5 * time.Second)
	before := r.snapshot(false)
	begin := time.Now()
	time.Sleep(window)
	after := r.snapshot(false)
	seconds := time.Since(begin).Seconds()
	var f leaseFigures
	var each []string
	for _, rep := range r.replicas {
		counts := subtract(after[rep.identity].Requests, before[rep.identity].Requests)
		events := counts[requests.EventsPrefix+"watch leases"]
		f.events += float64(events) / seconds
		f.mostEvents = max(f.mostEvents, float64(events)/seconds)
		f.reads += float64(counts["get leases"]+counts["list leases"]) / seconds
		f.writes += float64(countLeaseWrites(counts)) / seconds
		f.watches += counts["watch leases"]
		f.perReplica = append(f.perReplica, float64(events)/seconds)
	}
	slices.Sort(f.perReplica)
	for _, e := range f.perReplica {
		each = append(each, fmt.Sprintf("%.1f", e))
	}
	r.killAll()
	tb.Logf("lease traffic, %d replicas, %.0f s at rest: %.1f Lease events a second in all (per replica %s), %.2f reads and %.2f writes of Leases a second, %d Lease watches opened",
		n, seconds, f.events, strings.Join(each, ", "), f.reads, f.writes, f.watches)
	return f
}

// countLeaseWrites counts the writes of Leases among the counts.
func countLeaseWrites(counts map[string]int) int {
	return countWhere(counts, func(verb, resource string) bool { return isWriteVerb(verb) && resource == "leases" })
}

// TestShardLeaseTrafficSmoke runs BenchmarkShardLeaseTraffic's ring of
// eight replicas for a short window, so that it cannot rot, and checks
// what is not a matter of time: five replicas, no candidates, receive
// fewer Lease events than any replica would that followed every Lease
// (eight renewals a renew period, 1.6 a second, and before the
// candidates every replica but the assigner one more a second of the
// election's); the three candidates receive the members' renewals.
func TestShardLeaseTrafficSmoke(t *testing.T) {
	setup(t)
	const replicas = 8
	f := leaseTraffic(t, replicas, 6*time.Second)
	following := float64(replicas) / 5
	if quiet := f.perReplica[replicas-3-1]; quiet >= following {
		t.Errorf("Lease events a second at each replica %v: five receive less than the %.1f of a replica that follows every Lease, want the five that are no candidates to", f.perReplica, following)
	}
	if busy := f.perReplica[replicas-3]; busy < following {
		t.Errorf("Lease events a second at each replica %v: the three candidates receive less than the members' renewals, %.1f", f.perReplica, following)
	}
}
