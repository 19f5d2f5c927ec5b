package bench

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/internal/ring"
	"github.com/kopf-go/kopf/internal/sharding"
	"github.com/kopf-go/kopf/test/bench/internal/kex"
	"github.com/kopf-go/kopf/test/bench/internal/requests"
	"github.com/kopf-go/kopf/test/bench/internal/stats"
)

// shardSizes are the sharding workloads' numbers of objects.
type shardSizes struct {
	memory, throughput, rebalance, takeover int
}

// fullShardSizes are the issue's: 10,000 objects for memory; for the
// throughput, enough that one replica takes more than 10 s (2,000 objects
// at 100 ms each on 16 workers is 12.5 s at best).
var fullShardSizes = shardSizes{memory: 10_000, throughput: 2_000, rebalance: 3_000, takeover: 1_500}

// shardScale scales the sharding workloads, e.g. 0.1 while developing.
var shardScale = flag.Float64("sharding-scale", 1, "BenchmarkSharding: scale its numbers of objects by this factor")

func (s shardSizes) scaled(f float64) shardSizes {
	scale := func(n int) int { return max(1, int(math.Round(float64(n)*f))) }
	return shardSizes{memory: scale(s.memory), throughput: scale(s.throughput), rebalance: scale(s.rebalance), takeover: scale(s.takeover)}
}

// driverLabels makes the throughput workload's driver write each new
// object's owner label itself, as the assigner would, right after its
// create: a diagnostic that takes the assigner's writes out of the path.
var driverLabels = flag.Bool("sharding-driver-labels", false,
	"BenchmarkSharding: in the throughput workload, the driver writes the owner labels itself (a diagnostic)")

// assignerWorkers, if set, is how many objects the replicas' assigner
// writes at once (the operator's default if 0): a diagnostic.
var assignerWorkers = flag.Int("sharding-assigner-workers", 0,
	"BenchmarkSharding: how many objects the ring's assigner writes at once (0: the operator's default)")

// ringSizes are the numbers of replicas that the memory and throughput
// workloads compare.
var ringSizes = []int{1, 2, 4}

// ringRun names a sub-benchmark of a ring of n replicas (a namespace is
// named after it, so it holds no "=").
func ringRun(n int) string {
	if n == 1 {
		return "1replica"
	}
	return fmt.Sprintf("%dreplicas", n)
}

// replicasOf says "1 replica", "2 replicas".
func replicasOf(n int) string {
	if n == 1 {
		return "1 replica"
	}
	return fmt.Sprintf("%d replicas", n)
}

// handlerDelay is the throughput workload's simulated I/O in the create
// handler (the 100 ms; longer to see where the handlers rather
// than the API server are the limit); every replica has the operator's
// default of 16 workers.
var handlerDelay = flag.Duration("sharding-handler-delay", 100*time.Millisecond,
	"BenchmarkSharding: how long the throughput workload's create handler waits")

// shardingResults are BenchmarkSharding's figures, for its table.
type shardingResults struct {
	sizes      shardSizes
	memory     map[int]ringMemoryFigures
	throughput map[int]throughputFigures
	ceiling    *throughputFigures
	join       *rebalanceFigures
	leave      *rebalanceFigures
	takeovers  []takeoverFigures
}

// BenchmarkSharding measures rings of the quick start's replicas (each a
// process, every ring with the default lease durations): memory per
// replica with 10,000 objects, handler-bound throughput, the cost of a
// rebalance when a replica joins and leaves, and how long a SIGKILLed
// replica's objects wait for the others. `make bench` runs it; it prints
// a table for docs/benchmarks.md at the end.
func BenchmarkSharding(b *testing.B) {
	setup(b)
	r := shardingResults{sizes: fullShardSizes.scaled(*shardScale),
		memory: map[int]ringMemoryFigures{}, throughput: map[int]throughputFigures{}}
	b.Run("memory", func(b *testing.B) {
		for _, n := range ringSizes {
			b.Run(ringRun(n), func(b *testing.B) {
				for b.Loop() {
					f := ringMemory(b, n, r.sizes.memory)
					r.memory[n] = f
					f.report(b, r.memory[1])
				}
			})
		}
	})
	b.Run("throughput", func(b *testing.B) {
		b.Run("ceiling", func(b *testing.B) {
			for b.Loop() {
				f := ceilingThroughput(b, r.sizes.throughput)
				r.ceiling = &f
				b.ReportMetric(f.perSecond(), "objects/s")
				b.Logf("throughput, ceiling: %d objects with the operators' 5 writes each in %.2f s: %.0f objects/s",
					f.objects, f.elapsed.Seconds(), f.perSecond())
			}
		})
		for _, n := range ringSizes {
			b.Run(ringRun(n), func(b *testing.B) {
				for b.Loop() {
					f := ringThroughput(b, n, r.sizes.throughput)
					r.throughput[n] = f
					f.report(b, r.throughput[1])
				}
			})
		}
	})
	b.Run("rebalance", func(b *testing.B) {
		for b.Loop() {
			join, leave := ringRebalance(b, r.sizes.rebalance)
			r.join, r.leave = &join, &leave
			join.report(b, "join")
			leave.report(b, "leave")
		}
	})
	b.Run("takeover", func(b *testing.B) {
		for b.Loop() {
			r.takeovers = ringTakeover(b, r.sizes.takeover)
			for _, f := range r.takeovers {
				f.report(b)
			}
		}
	})
	writeShardingTable(os.Stdout, r)
}

// ringMemoryFigures are one ring's memory: each replica's before any
// object and once all are handled, after a collection.
type ringMemoryFigures struct {
	objects  int
	replicas []replicaMemory
}

type replicaMemory struct {
	identity    string
	assigner    bool
	objects     int // the objects it owns
	empty, full stats.Stats
}

// ringMemory starts a ring of replicas, has it handle n objects, and
// measures every replica's memory.
func ringMemory(tb testing.TB, replicas, n int) ringMemoryFigures {
	tb.Helper()
	ns := fixtures.env.Namespace(tb)
	driver := newClient(tb, nil)
	obs := observeWith(tb, ns, kex.KopfLastHandled, newRingView(ns, ringName))
	r := newBenchRing(tb, ns, heapProfiled)
	r.start(replicas)
	r.settle()
	empty := r.snapshot(true)
	begin := time.Now()
	// The driver writes the owner labels as the assigner would, 64 at a
	// time: what is measured here is what the replicas hold, not how fast
	// the objects got there (the throughput workload has the assigner
	// write them).
	createOwned(tb, driver, ns, n, bulkWorkers, r.members())
	created := time.Since(begin)
	handled := obs.await(tb, "all are handled", phaseTimeout, handledAll(n, 0)).Sub(begin)
	labelled := obs.ringNow().lastAssigned.Sub(begin)
	r.settle()
	full := r.snapshot(true)
	f := ringMemoryFigures{objects: n}
	assigner := r.assigner()
	for _, rep := range r.replicas {
		f.replicas = append(f.replicas, replicaMemory{identity: rep.identity, assigner: rep == assigner,
			objects: obs.ownedBy(rep.member), empty: empty[rep.identity], full: full[rep.identity]})
	}
	// Nothing of the replicas is measured any more, their stop included:
	// they are killed (their Leases stay behind in the workload's
	// namespace), and the driver deletes the objects itself, with no
	// delete handlers' reconciles to share the cores with.
	r.killAll()
	begin = time.Now()
	dropAll(tb, driver, obs, ns, n)
	tb.Logf("memory, %s: %d objects created in %.1f s, labelled by %.1f s, handled by %.1f s; deleted in %.1f s",
		replicasOf(replicas), n, created.Seconds(), labelled.Seconds(), handled.Seconds(), time.Since(begin).Seconds())
	return f
}

// meanMax are the mean and the maximum of a figure over the replicas.
func (f ringMemoryFigures) meanMax(figure func(replicaMemory) float64) (mean, most float64) {
	for _, rep := range f.replicas {
		v := figure(rep)
		mean += v / float64(len(f.replicas))
		most = max(most, v)
	}
	return mean, most
}

func heapOf(rep replicaMemory) float64  { return inMiB(rep.full.HeapInuse) }
func rssOf(rep replicaMemory) float64   { return inMiB(rep.full.RSS) }
func emptyOf(rep replicaMemory) float64 { return inMiB(rep.empty.HeapInuse) }

// cacheOf is the heap that came with the objects: the heap in use once
// they are handled over the heap in use before them.
func cacheOf(rep replicaMemory) float64 { return heapOf(rep) - emptyOf(rep) }

func inMiB(b uint64) float64 { return float64(b) / (1 << 20) }

func (f ringMemoryFigures) report(b *testing.B, one ringMemoryFigures) {
	heap, heapMax := f.meanMax(heapOf)
	rss, rssMax := f.meanMax(rssOf)
	empty, _ := f.meanMax(emptyOf)
	cache, cacheMax := f.meanMax(cacheOf)
	b.ReportMetric(heap, "heap-MiB-mean")
	b.ReportMetric(heapMax, "heap-MiB-max")
	b.ReportMetric(rss, "RSS-MiB-mean")
	b.ReportMetric(rssMax, "RSS-MiB-max")
	b.ReportMetric(cache, "cache-MiB-mean")
	var shares []string
	for _, rep := range f.replicas {
		role := ""
		if rep.assigner {
			role = ", the assigner"
		}
		shares = append(shares, fmt.Sprintf("%s: %d objects, heap %.1f MiB (%.1f before the objects), RSS %.1f MiB%s",
			rep.identity, rep.objects, heapOf(rep), emptyOf(rep), rssOf(rep), role))
	}
	b.Logf("memory, %s × %d objects: heap in use per replica mean %.1f MiB, max %.1f MiB; RSS mean %.1f MiB, max %.1f MiB; "+
		"before the objects, heap mean %.1f MiB; the objects' share of the heap mean %.1f MiB, max %.1f MiB\n\t%s",
		replicasOf(len(f.replicas)), f.objects, heap, heapMax, rss, rssMax, empty, cache, cacheMax, strings.Join(shares, "\n\t"))
	if len(one.replicas) == 1 && len(f.replicas) > 1 {
		oneCache, _ := one.meanMax(cacheOf)
		oneHeap, _ := one.meanMax(heapOf)
		b.ReportMetric(cache*float64(len(f.replicas))/oneCache, "cache-share×N")
		b.Logf("memory, %d replicas against 1: heap mean %.2f ×, max %.2f × (1/N = %.2f); the objects' share mean %.2f ×, max %.2f ×",
			len(f.replicas), heap/oneHeap, heapMax/oneHeap, 1/float64(len(f.replicas)), cache/oneCache, cacheMax/oneCache)
	}
}

// throughputFigures are one run of the throughput workload.
type throughputFigures struct {
	objects int
	// elapsed runs from the first create request until all are handled;
	// created until the last create request returned; labelled until the
	// assigner's last owner label was seen.
	elapsed, created, labelled time.Duration
	// calls are each replica's create handler calls; requests all
	// replicas' requests.
	calls    []int
	cpu      float64
	requests map[string]int
}

func (f throughputFigures) perSecond() float64 { return float64(f.objects) / f.elapsed.Seconds() }

// ringThroughput starts a ring whose create handler waits 100 ms, creates
// n objects at once, and times them until all are handled.
func ringThroughput(tb testing.TB, replicas, n int) throughputFigures {
	tb.Helper()
	ns := fixtures.env.Namespace(tb)
	driver := newClient(tb, nil)
	obs := observeWith(tb, ns, kex.KopfLastHandled, newRingView(ns, ringName))
	r := newBenchRing(tb, ns, "--handler-delay", (*handlerDelay).String())
	r.start(replicas)
	r.settle()
	var owners []string
	if *driverLabels {
		owners = r.members()
	}
	before := r.snapshot(false)
	begin := time.Now()
	createOwned(tb, driver, ns, n, 0, owners)
	created := time.Since(begin)
	end := obs.await(tb, "all are handled", phaseTimeout, handledAll(n, 0))
	labelled := obs.ringNow().lastAssigned.Sub(begin)
	r.settle()
	after := r.snapshot(false)
	f := throughputFigures{objects: n, elapsed: end.Sub(begin), created: created, labelled: labelled,
		requests: requestsBetween(before, after)}
	for _, rep := range r.replicas {
		f.calls = append(f.calls, after[rep.identity].Calls["create"]-before[rep.identity].Calls["create"])
		f.cpu += after[rep.identity].CPU - before[rep.identity].CPU
	}
	deleteAll(tb, driver, obs, ns, n)
	r.stopAll()
	return f
}

func (f throughputFigures) report(b *testing.B, one throughputFigures) {
	b.ReportMetric(f.perSecond(), "objects/s")
	b.ReportMetric(f.elapsed.Seconds(), "handled-s")
	b.ReportMetric(float64(countWrites(f.requests))/float64(f.objects), "writes/object")
	scaling := ""
	if one.objects > 0 && len(f.calls) > 1 {
		x := f.perSecond() / one.perSecond()
		b.ReportMetric(x, "×1-replica")
		scaling = fmt.Sprintf("; %.2f × one replica's rate (%.2f × N)", x, x/float64(len(f.calls)))
	}
	b.Logf("throughput, %s × 16 workers, create handler %s: %d objects handled in %.2f s: %.1f objects/s%s; "+
		"created in %.2f s, all owner labels by %.2f s; create calls per replica %v; CPU of all replicas %.1f s; "+
		"%.2f writes per object; requests %s",
		replicasOf(len(f.calls)), *handlerDelay, f.objects, f.elapsed.Seconds(), f.perSecond(), scaling,
		f.created.Seconds(), f.labelled.Seconds(), f.calls, f.cpu, float64(countWrites(f.requests))/float64(f.objects),
		formatCounts(f.requests))
}

// ceilingThroughput is the API server's limit for the throughput
// workload: the driver makes the ring's writes itself, for all objects at
// once, with no watching and no waiting: the create, the owner label, the
// finalizer, the result in status, and the last handled state.
func ceilingThroughput(tb testing.TB, n int) throughputFigures {
	tb.Helper()
	ns := fixtures.env.Namespace(tb)
	driver := newClient(tb, nil)
	counter := &requests.Counter{}
	writer := newClient(tb, counter)
	obs := observe(tb, ns, kex.KopfLastHandled)
	patches := []string{
		ownerPatch(ns, "ceiling"),
		fmt.Sprintf(`{"metadata":{"finalizers":[%q]}}`, kex.Finalizer),
		"status",
		fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, kex.KopfLastHandled, kex.LastHandledOf(kex.New(ns, 0).Spec)),
	}
	begin := time.Now()
	// As many at once as the driver's bulk work: the API server does
	// fewer writes a second with a goroutine per object.
	if err := forEach(n, bulkWorkers, func(i int) error {
		obj := kex.New(ns, i)
		if err := driver.Create(context.Background(), obj); err != nil {
			return err
		}
		for _, p := range patches {
			var err error
			if p == "status" {
				err = writer.Status().Patch(context.Background(), kex.New(ns, i),
					client.RawPatch(types.MergePatchType, []byte(`{"status":{"create_fn":{"message":"created"}}}`)))
			} else {
				err = mergePatch(writer, kex.New(ns, i), p)
			}
			if err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		tb.Fatalf("the ceiling's writes: %v", err)
	}
	end := obs.await(tb, "all are handled", phaseTimeout, handledAll(n, 0))
	f := throughputFigures{objects: n, elapsed: end.Sub(begin), created: end.Sub(begin), requests: counter.Counts()}
	dropAll(tb, driver, obs, ns, n)
	return f
}

// createOwned creates n objects, workers at a time (all at once if 0),
// and if members are given, writes each one's owner label right after
// its create, where the hashing over them puts it, as the assigner does.
func createOwned(tb testing.TB, driver client.Client, ns string, n, workers int, members []string) {
	tb.Helper()
	if err := forEach(n, workers, func(i int) error {
		obj := kex.New(ns, i)
		if err := driver.Create(context.Background(), obj); err != nil {
			return err
		}
		if members == nil {
			return nil
		}
		return mergePatch(driver, obj, ownerPatch(ns, sharding.Owner(sharding.ObjectKey(obj.Namespace, obj.Name), members)))
	}); err != nil {
		tb.Fatalf("create the objects: %v", err)
	}
}

// ownerPatch is the assigner's write of an object's owner: the owner
// label and the grant, in one patch.
func ownerPatch(ns, owner string) string {
	keys := ring.KeysOf(ns, ringName)
	return fmt.Sprintf(`{"metadata":{"labels":{%q:%q},"annotations":{%q:%q}}}`, keys.Owner, owner, keys.Granted, owner)
}

// formatCounts lists request counts by key, sorted.
func formatCounts(counts map[string]int) string {
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s: %d", k, counts[k])
	}
	return "{" + strings.Join(parts, ", ") + "}"
}
