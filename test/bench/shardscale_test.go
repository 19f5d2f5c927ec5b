package bench

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/internal/ring"
	"github.com/kopf-go/kopf/internal/sharding"
	"github.com/kopf-go/kopf/test/bench/internal/kex"
	"github.com/kopf-go/kopf/test/bench/internal/requests"
	"github.com/kopf-go/kopf/test/bench/internal/stats"
)

// BenchmarkShardingScale's knobs. The sizes are numbers of objects; the
// parts are "ring" (memory at 1, 2 and 4 replicas, the joins between
// them, the update rates at 4, and a leave) and "takeover" (a ring of
// takeoverRing with a daemon per object, a member and then, at rest, the
// assigner SIGKILLed).
var (
	scaleObjects = flag.String("sharding-scale-objects", "10000", "BenchmarkShardingScale: numbers of objects, comma-separated (e.g. 10000,100000)")
	scaleParts   = flag.String("sharding-scale-parts", "ring,takeover", "BenchmarkShardingScale: the parts to run at every size, comma-separated: ring, takeover")
	scaleRates   = flag.String("sharding-scale-rates", "0,50,200", "BenchmarkShardingScale: spec updates a second, spread over the objects, at which the 4-replica ring's CPU and watch events are measured")
	scaleWindow  = flag.Duration("sharding-scale-window", 20*time.Second, "BenchmarkShardingScale: how long each update rate is measured")
)

// kopfFinalizer is the engine's default finalizer: the driver's objects
// are created with it, so that no replica writes it.
const kopfFinalizer = "kopf.zalando.org/KopfFinalizerMarker"

// scaleFigures are BenchmarkShardingScale's figures at one size.
type scaleFigures struct {
	objects int
	// created is how long the driver took to create the objects (placed
	// and handled already), at each ring.
	created map[string]time.Duration
	// memory is by the number of replicas.
	memory map[int][]replicaMemory
	// joins are 1 → 2, 2 → 3 and 3 → 4; leave is 4 → 3.
	joins []rebalanceFigures
	leave *rebalanceFigures
	loads []loadFigures
	// takeovers are a member's, then the assigner's.
	takeovers []takeoverFigures
	// idleWrites are the writes to the objects that the replicas made
	// between the driver's creates and their idling: 0 if the driver's
	// objects were as handled as the replicas' own would have been.
	idleWrites map[string]int
}

// BenchmarkShardingScale measures a shard ring of the quick start's
// replicas at 10,000 objects and more: each replica's heap, the
// assigner's CPU and watch events against the others' as the objects are
// updated faster, the writes and the time of a join and a leave, and how
// long a SIGKILLed member's and assigner's objects wait. The objects are
// created handled (BenchmarkSharding measures the handling): each is
// created with its owner label where the hashing puts it, the finalizer
// and the last handled state already, so that filling a namespace costs
// one write an object, not five. It prints a table for docs/benchmarks.md.
func BenchmarkShardingScale(b *testing.B) {
	setup(b)
	var sizes []int
	for _, field := range strings.Split(*scaleObjects, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(field))
		if err != nil || n < 1 {
			b.Fatalf("-sharding-scale-objects: %q is not a number of objects", field)
		}
		sizes = append(sizes, n)
	}
	rates := parseRates(b, *scaleRates)
	parts := strings.Split(*scaleParts, ",")
	var all []scaleFigures
	for _, n := range sizes {
		f := scaleFigures{objects: n, created: map[string]time.Duration{}, memory: map[int][]replicaMemory{}, idleWrites: map[string]int{}}
		if slices.Contains(parts, "ring") {
			b.Run(fmt.Sprintf("ring-%d", n), func(b *testing.B) {
				for b.Loop() {
					scaleRing(b, &f, rates, *scaleWindow, false)
				}
			})
		}
		if slices.Contains(parts, "takeover") {
			b.Run(fmt.Sprintf("takeover-%d", n), func(b *testing.B) {
				for b.Loop() {
					scaleTakeover(b, &f)
				}
			})
		}
		all = append(all, f)
	}
	writeScaleTable(os.Stdout, all)
}

// TestShardingScaleWorkload runs the ring part of BenchmarkShardingScale
// with a few hundred objects (the takeover waits out lease durations, so
// it runs only in the benchmark), so that it cannot rot, and checks what
// is not a matter of time: the objects created handled cost the replicas
// no write, a join and a leave write each moved object once, and the
// assigner's watch of unowned objects hears nothing of the updates.
func TestShardingScaleWorkload(t *testing.T) {
	setup(t)
	f := scaleFigures{objects: 200, created: map[string]time.Duration{}, memory: map[int][]replicaMemory{}, idleWrites: map[string]int{}}
	scaleRing(t, &f, []float64{0, 20}, 2*time.Second, true)
	var table strings.Builder
	writeScaleTable(&table, []scaleFigures{f})
	t.Log("\n" + table.String())
	if w := f.idleWrites["ring"]; w != 0 {
		t.Errorf("the replicas wrote to objects created handled %d times, want 0", w)
	}
	for _, j := range append(slices.Clone(f.joins), *f.leave) {
		if j.moved != j.expected || landedObjectWrites(j.requests) != j.moved {
			t.Errorf("%d → %d replicas: %d objects moved (the hashing moves %d) with %d writes to objects that landed, want one each: %v",
				j.replicasBefore, j.replicasAfter, j.moved, j.expected, landedObjectWrites(j.requests), j.requests)
		}
	}
	for _, l := range f.loads {
		if l.updates > 0 && l.assigner.unowned > bookmarks {
			t.Errorf("at %.0f updates/s the assigner's watch of unowned objects had %d events, want at most %d (bookmarks)", l.rate, l.assigner.unowned, bookmarks)
		}
		if l.rate > 0 && l.updates == 0 {
			t.Errorf("no update was made at %.0f updates/s", l.rate)
		}
	}
	for _, n := range ringSizes {
		if len(f.memory[n]) != n {
			t.Errorf("memory at %d replicas: %d figures", n, len(f.memory[n]))
		}
	}
}

func parseRates(tb testing.TB, list string) []float64 {
	tb.Helper()
	var out []float64
	for _, field := range strings.Split(list, ",") {
		r, err := strconv.ParseFloat(strings.TrimSpace(field), 64)
		if err != nil || r < 0 {
			tb.Fatalf("-sharding-scale-rates: %q is not a rate", field)
		}
		out = append(out, r)
	}
	return out
}

// scaleRing grows a ring from 1 to 4 replicas over f.objects objects,
// measuring the memory at 1, 2 and 4 and each join, then the update
// rates at 4, then a leave to 3. cleanup deletes the objects at the end
// (a test's); the benchmark leaves them to the control plane's stop, as
// deleting 100,000 objects with finalizers is minutes of no interest.
func scaleRing(tb testing.TB, f *scaleFigures, rates []float64, window time.Duration, cleanup bool) {
	n := f.objects
	f.joins, f.loads = nil, nil // a benchmark's loop may run it again
	ns := fixtures.env.Namespace(tb)
	driver := newClient(tb, nil)
	obs := observeWith(tb, ns, kex.KopfLastHandled, newRingView(ns, ringName))
	// With -profiles, every replica leaves a heap profile of its last
	// memory reading (at 4 replicas).
	r := newBenchRing(tb, ns, "--count-events", heapProfiled)
	r.start(1)
	template := handledTemplate(tb, driver, obs, ns)
	r.settle()
	before := r.snapshot(false)
	f.created["ring"] = createPlaced(tb, driver, ns, n, r.members(), template)
	obs.expect(r.members())
	obs.await(tb, "all are placed on 1 replica", phaseTimeout, placedAll(n))
	r.settle()
	f.idleWrites["ring"] = objectWrites(requestsBetween(before, r.snapshot(false)))
	tb.Logf("scale, %d objects: created placed and handled in %.1f s; the replica wrote to them %d times after",
		n, f.created["ring"].Seconds(), f.idleWrites["ring"])
	f.memory[1] = r.memory(obs)
	for _, to := range []int{2, 3, 4} {
		j := r.join(obs, n)
		f.joins = append(f.joins, j)
		tb.Logf("scale, %d objects, join %d → %d: %s", n, j.replicasBefore, j.replicasAfter, j.summary())
		if slices.Contains(ringSizes, to) {
			f.memory[to] = r.memory(obs)
		}
	}
	for _, k := range ringSizes {
		tb.Logf("scale, %d objects, memory at %s: %s", n, replicasOf(k), memorySummary(f.memory[k]))
	}
	for _, rate := range rates {
		l := r.load(driver, ns, n, rate, window)
		f.loads = append(f.loads, l)
		tb.Logf("scale, %d objects, 4 replicas, %s", n, l.summary())
	}
	leave := r.leave(obs, n)
	f.leave = &leave
	tb.Logf("scale, %d objects, leave %d → %d: %s", n, leave.replicasBefore, leave.replicasAfter, leave.summary())
	r.killAll()
	if cleanup {
		dropAll(tb, driver, obs, ns, n)
		template.Finalizers = nil
		if err := mergePatch(driver, template, `{"metadata":{"finalizers":null}}`); err != nil {
			tb.Fatalf("release the template: %v", err)
		}
		if err := client.IgnoreNotFound(driver.Delete(context.Background(), template)); err != nil {
			tb.Fatalf("delete the template: %v", err)
		}
	}
}

// scaleTakeover has a ring of takeoverRing replicas, with a daemon for
// every object, hold f.objects objects, and SIGKILLs a member that is not
// the assigner, then, at rest, the assigner (killTwice, on objects created
// handled).
func scaleTakeover(tb testing.TB, f *scaleFigures) {
	n := f.objects
	f.takeovers = nil
	ns := fixtures.env.Namespace(tb)
	driver := newClient(tb, nil)
	obs := observeWith(tb, ns, kex.KopfLastHandled, newRingView(ns, ringName))
	r := newBenchRing(tb, ns, "--daemons", "--count-events")
	r.start(*takeoverRing)
	template := handledTemplate(tb, driver, obs, ns)
	r.settle()
	before := r.snapshot(false)
	f.created["takeover"] = createPlaced(tb, driver, ns, n, r.members(), template)
	obs.expect(r.members())
	obs.await(tb, fmt.Sprintf("all are placed on %d replicas", *takeoverRing), phaseTimeout, placedAll(n))
	begin := time.Now()
	// The template object is one more.
	r.waitDaemons(n+1, phaseTimeout)
	daemons := time.Since(begin)
	r.settle()
	f.idleWrites["takeover"] = objectWrites(requestsBetween(before, r.snapshot(false)))
	tb.Logf("scale, takeover, %d objects: created placed and handled in %.1f s, all daemons running %.1f s later; the replicas wrote to them %d times after",
		n, f.created["takeover"].Seconds(), daemons.Seconds(), f.idleWrites["takeover"])
	f.takeovers = r.killTwice(obs, n+1, func(k takeoverFigures) {
		tb.Logf("scale, takeover, %d objects: %s", n, k.summary())
	})
	r.killAll()
}

// handledTemplate has the ring handle one object, kex-template, and
// returns it as the replicas left it: its finalizer and Kopf's
// annotations are what the driver gives the objects it creates handled.
// Copying them, rather than writing them out here, keeps the driver's
// objects as handled as the engine's own, whatever the engine stores.
func handledTemplate(tb testing.TB, driver client.Client, obs *observer, ns string) *kex.KopfExample {
	tb.Helper()
	obj := kex.New(ns, 0)
	obj.Name = "kex-template"
	if err := driver.Create(context.Background(), obj); err != nil {
		tb.Fatalf("create the template: %v", err)
	}
	obs.await(tb, "the template is handled", phaseTimeout, handledAll(1, 0))
	if err := driver.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
		tb.Fatalf("read the template: %v", err)
	}
	tb.Logf("the template as handled: labels %v, annotations %v, finalizers %v", obj.Labels, obj.Annotations, obj.Finalizers)
	return obj
}

// placedObject is object i as the ring would leave it once handled: the
// template's finalizers and annotations, with the owner label and grant
// of owner, and its bucket label, as placement at admission sets them.
func placedObject(ns string, i int, owner string, template *kex.KopfExample) *kex.KopfExample {
	obj := kex.New(ns, i)
	keys := ring.KeysOf(ns, ringName)
	for k, v := range template.Annotations {
		obj.Annotations[k] = v
	}
	obj.Finalizers = slices.Clone(template.Finalizers)
	if !slices.Contains(obj.Finalizers, kopfFinalizer) {
		obj.Finalizers = append(obj.Finalizers, kopfFinalizer)
	}
	obj.Labels[keys.Owner], obj.Annotations[keys.Granted] = owner, owner
	obj.Labels[keys.Bucket] = ring.BucketLabel(ns, obj.Name)
	return obj
}

// createPlaced creates n objects, each handled and placed where the
// hashing over members puts it, in one create each, and returns how long
// that took. The status (the create handler's result) is left out: it is
// a second write, and the engine does not read it.
func createPlaced(tb testing.TB, driver client.Client, ns string, n int, members []string, template *kex.KopfExample) time.Duration {
	tb.Helper()
	begin := time.Now()
	if err := forEach(n, bulkWorkers, func(i int) error {
		name := kex.New(ns, i).Name
		return driver.Create(context.Background(), placedObject(ns, i, sharding.Owner(sharding.ObjectKey(ns, name), members), template))
	}); err != nil {
		tb.Fatalf("create the objects: %v", err)
	}
	took := time.Since(begin)
	tb.Logf("created %d objects in %.1f s (%.0f a second)", n, took.Seconds(), float64(n)/took.Seconds())
	return took
}

// memory reads every running replica's heap after two collections, once
// they are idle.
func (r *benchRing) memory(obs *observer) []replicaMemory {
	r.settle()
	full := r.snapshot(true)
	assigner := r.assigner()
	var out []replicaMemory
	for _, rep := range r.replicas {
		out = append(out, replicaMemory{identity: rep.identity, assigner: rep == assigner,
			objects: obs.ownedBy(rep.member), full: full[rep.identity]})
	}
	return out
}

// liveOf is the heap's live objects after a collection (HeapAlloc):
// unlike the heap in use, it does not count the free room in spans that
// hold some live object, which a replica that gave objects away keeps.
func liveOf(rep replicaMemory) float64 { return inMiB(rep.full.HeapAlloc) }

// roleHeaps are the assigner's figure and the others' mean and maximum,
// in MiB; others is false with one replica.
func roleHeaps(reps []replicaMemory, figure func(replicaMemory) float64) (assigner, mean, most float64, others bool) {
	k := 0
	for _, rep := range reps {
		if rep.assigner {
			assigner = figure(rep)
			continue
		}
		k++
		mean += figure(rep)
		most = max(most, figure(rep))
	}
	if k > 0 {
		mean /= float64(k)
	}
	return assigner, mean, most, k > 0
}

func memorySummary(reps []replicaMemory) string {
	var parts []string
	for _, rep := range reps {
		role := ""
		if rep.assigner {
			role = ", the assigner"
		}
		parts = append(parts, fmt.Sprintf("%s: %d objects, heap in use %.1f MiB (live %.1f MiB), RSS %.1f MiB, %d goroutines%s",
			rep.identity, rep.objects, heapOf(rep), liveOf(rep), rssOf(rep), rep.full.Goroutines, role))
	}
	return strings.Join(parts, "; ")
}

// join starts one more replica and measures the rebalance until every
// object is where the hashing over all puts it and the ring is idle.
func (r *benchRing) join(obs *observer, n int) rebalanceFigures {
	r.tb.Helper()
	// What the ring still does of the phase before (an update's handler)
	// is not the join's.
	r.settle()
	f := rebalanceFigures{replicasBefore: len(r.replicas), replicasAfter: len(r.replicas) + 1}
	before, moved := r.snapshot(false), obs.ringNow().moved
	begin := time.Now()
	joiner := r.start(1)[0]
	f.expected = obs.hashedTo(r.members(), joiner.member)
	obs.expect(r.members())
	f.took = obs.await(r.tb, fmt.Sprintf("all are placed among %d replicas", f.replicasAfter), phaseTimeout, placedAll(n)).Sub(begin)
	r.settle()
	f.requests = requestsBetween(before, r.snapshot(false))
	f.moved = obs.ringNow().moved - moved
	return f
}

// leave stops the latest replica that is not the assigner gracefully and
// measures the rebalance as join does.
func (r *benchRing) leave(obs *observer, n int) rebalanceFigures {
	r.tb.Helper()
	r.settle() // as join does
	assigner := r.assigner()
	var leaver *replica
	for _, rep := range r.replicas {
		if rep != assigner {
			leaver = rep
		}
	}
	f := rebalanceFigures{replicasBefore: len(r.replicas), replicasAfter: len(r.replicas) - 1}
	before, moved := r.snapshot(false), obs.ringNow().moved
	f.expected = obs.expect(slices.DeleteFunc(r.members(), func(m string) bool { return m == leaver.member }))
	begin := time.Now()
	leaver.op.stop(r.tb)
	r.remove(leaver)
	f.took = obs.await(r.tb, fmt.Sprintf("all are placed among %d replicas", f.replicasAfter), phaseTimeout, placedAll(n)).Sub(begin)
	r.settle()
	after := r.snapshot(false)
	after[leaver.identity] = leaver.op.finalStats(r.tb)
	f.requests = requestsBetween(before, after)
	f.moved = obs.ringNow().moved - moved
	return f
}

func (f rebalanceFigures) summary() string {
	return fmt.Sprintf("%d objects moved (the hashing moves %d) in %.2f s; writes to objects %d (%.2f per moved object), to Leases %d; "+
		"reads %d; requests of all replicas %s",
		f.moved, f.expected, f.took.Seconds(), objectWrites(f.requests), f.writesPerMoved(), leaseWrites(f.requests),
		reads(f.requests), formatCounts(f.requests))
}

// loadFigures are one update rate's measurement at a ring.
type loadFigures struct {
	rate    float64 // asked for, updates a second
	updates int     // made
	elapsed time.Duration
	// assigner is the assigner's replica's; others the mean of the
	// others'.
	assigner, others replicaLoad
	replicas         int
}

// replicaLoad is a replica's share of a load: CPU seconds a second, and
// the events its watches of the objects received, in all and on the
// assigner's watch of unowned objects.
type replicaLoad struct {
	cpu             float64
	events, unowned int
}

// load updates the objects' spec at rate updates a second for window,
// each update the next object in turn (so spread over all of them and
// all the replicas), and measures each replica's CPU and watch events.
// An update the driver cannot start in time (its workers all busy) is
// skipped, not queued: the rate made is reported beside the rate asked.
func (r *benchRing) load(driver client.Client, ns string, n int, rate float64, window time.Duration) loadFigures {
	r.tb.Helper()
	r.settle()
	assigner := r.assigner()
	before := r.snapshot(false)
	begin := time.Now()
	var made atomic.Int64
	if rate > 0 {
		todo := make(chan int, bulkWorkers)
		var wg sync.WaitGroup
		for range bulkWorkers {
			wg.Go(func() {
				for k := range todo {
					// Object k's counter is k's round over the objects,
					// plus one: every update changes the spec.
					if err := setCounter(driver, ns, k%n, k/n+1); err == nil {
						made.Add(1)
					}
				}
			})
		}
		tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
		for k := 0; time.Since(begin) < window; {
			<-tick.C
			select {
			case todo <- k:
				k++
			default:
			}
		}
		tick.Stop()
		close(todo)
		wg.Wait()
	} else {
		time.Sleep(window)
	}
	after := r.snapshot(false)
	elapsed := time.Since(begin)
	f := loadFigures{rate: rate, updates: int(made.Load()), elapsed: elapsed, replicas: len(r.replicas)}
	k := 0
	for _, rep := range r.replicas {
		a, b := after[rep.identity], before[rep.identity]
		l := replicaLoad{cpu: (a.CPU - b.CPU) / elapsed.Seconds(), events: objectEvents(a, b, false), unowned: objectEvents(a, b, true)}
		if rep == assigner {
			f.assigner = l
			continue
		}
		k++
		f.others.cpu += l.cpu
		f.others.events += l.events
		f.others.unowned += l.unowned
	}
	if k > 0 {
		f.others.cpu /= float64(k)
		f.others.events /= k
		f.others.unowned /= k
	}
	return f
}

// objectEvents counts the events that a replica's watches of the
// objects received between two of its stats; unowned only the
// assigner's watch of the objects that no live member owns.
func objectEvents(after, before stats.Stats, unowned bool) int {
	d := subtract(after.Requests, before.Requests)
	return countWhere(d, func(verb, resource string) bool {
		if verb != strings.TrimSpace(requests.EventsPrefix) || !strings.HasPrefix(resource, "watch "+kex.Resource) {
			return false
		}
		return !unowned || strings.HasSuffix(resource, requests.UnownedSuffix)
	})
}

func (l loadFigures) made() float64 { return float64(l.updates) / l.elapsed.Seconds() }

func (l loadFigures) summary() string {
	return fmt.Sprintf("%.0f updates/s asked, %d made in %.1f s (%.1f/s): the assigner's replica %.3f CPU s/s, %d watch events of the objects "+
		"(%d on its watch of unowned objects); the other replicas' mean %.3f CPU s/s, %d watch events",
		l.rate, l.updates, l.elapsed.Seconds(), l.made(), l.assigner.cpu, l.assigner.events, l.assigner.unowned, l.others.cpu, l.others.events)
}

func (f takeoverFigures) summary() string {
	who, elected := "a member", ""
	if f.assigner {
		who, elected = "the assigner", fmt.Sprintf("; another replica became the assigner after %.2f s", f.elected.Seconds())
	}
	return fmt.Sprintf("%s of %d replicas killed (SIGKILL, lease 15 s): all its %d objects' daemons running on the others after %.2f s (the first after %.2f s; "+
		"the machine's cores %.2f busy meanwhile, of %d: %s; the survivors started %s)%s%s; %s",
		who, f.replicasBefore, f.objects, f.handled.Seconds(), f.firstHandled.Seconds(), f.busy, runtime.NumCPU(), coresLine(f.cores), startsLine(f.starts),
		f.adoptedSummary(), elected, f.claimSummary())
}

// adoptedSummary tells how many daemons the killed replica ran beside its
// own objects': those it had adopted and not claimed yet.
func (f takeoverFigures) adoptedSummary() string {
	if f.ran <= f.objects {
		return ""
	}
	return fmt.Sprintf(", and the %d it ran for objects it had adopted and not claimed yet", f.ran-f.objects)
}

// claimSummary says how the adopters' claims went.
func (f takeoverFigures) claimSummary() string {
	if f.labelled != 0 {
		return fmt.Sprintf("its objects all claimed (labelled with others) after %.2f s, the first after %.2f s: %.0f claims/s",
			f.labelled.Seconds(), f.firstMoved.Seconds(), f.labelRate())
	}
	return fmt.Sprintf("claims from %.2f s on, %d of its objects left unclaimed at %.2f s: %.0f claims/s",
		f.firstMoved.Seconds(), f.unclaimed, f.claimedBy.Seconds(), f.labelRate())
}

// bookmarks is how many events a watch may hear in a load's window that
// are none of the objects': the API server's bookmarks, about one a
// minute.
const bookmarks = 2

// labelRate is how many of the killed replica's objects were claimed
// (labelled with others) a second, from the first claim to the last, or
// to the end of the claims' window.
func (f takeoverFigures) labelRate() float64 {
	end, claimed := f.labelled, f.objects
	if end == 0 {
		end, claimed = f.claimedBy, f.objects-f.unclaimed
	}
	if f.firstMoved == 0 || end <= f.firstMoved {
		return 0
	}
	return float64(claimed) / (end - f.firstMoved).Seconds()
}

// takeoverTarget is the scale target for a takeover: the lease duration
// and 2 s.
const takeoverTarget = ring.DefaultLeaseDuration + 2*time.Second

// writeScaleTable prints BenchmarkShardingScale's figures as the tables
// of docs/benchmarks.md, a column per size; parts that did not run are
// left out.
func writeScaleTable(w io.Writer, all []scaleFigures) {
	yes := func(ok bool) string {
		if ok {
			return "yes"
		}
		return "**no**"
	}
	row := func(cells ...string) { fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | ")) }
	for _, f := range all {
		if len(f.memory) > 0 {
			fmt.Fprintf(w, "\n%d objects, the ring (created in %.1f s; writes to them by the replicas after: %d):\n\n",
				f.objects, f.created["ring"].Seconds(), f.idleWrites["ring"])
			row("after GC, MiB", "1 replica", "2 replicas", "4 replicas")
			row("---", "---:", "---:", "---:")
			for _, figure := range []struct {
				name string
				of   func(replicaMemory) float64
			}{{"heap in use", heapOf}, {"heap live (HeapAlloc)", liveOf}} {
				assigner, others := []string{figure.name + ", the assigner's replica"}, []string{figure.name + ", the others, mean (max)"}
				for _, k := range ringSizes {
					a, mean, most, hasOthers := roleHeaps(f.memory[k], figure.of)
					assigner = append(assigner, fmt.Sprintf("%.1f", a))
					if hasOthers {
						others = append(others, fmt.Sprintf("%.1f (%.1f)", mean, most))
					} else {
						others = append(others, "—")
					}
				}
				row(assigner...)
				row(others...)
			}
			objects := []string{"objects per replica, assigner / others fewest–most"}
			for _, k := range ringSizes {
				objects = append(objects, objectsCell(f.memory[k]))
			}
			row(objects...)
		}
		if len(f.loads) > 0 {
			fmt.Fprintln(w)
			row("updates/s asked (made), 4 replicas", "assigner's CPU, s/s", "others' CPU, mean s/s", "assigner's watch events of the objects (on its unowned watch)",
				"others' watch events, mean", "window, s")
			row("---", "---:", "---:", "---:", "---:", "---:")
			for _, l := range f.loads {
				row(fmt.Sprintf("%.0f (%.1f)", l.rate, l.made()), fmt.Sprintf("%.3f", l.assigner.cpu), fmt.Sprintf("%.3f", l.others.cpu),
					fmt.Sprintf("%d (%d)", l.assigner.events, l.assigner.unowned), fmt.Sprint(l.others.events), fmt.Sprintf("%.1f", l.elapsed.Seconds()))
			}
			// The target: the assigner's watch of unowned objects hears
			// nothing of the updates (a bookmark or two aside), and its
			// replica hears no more of them than another.
			ok := true
			for _, l := range f.loads {
				ok = ok && l.assigner.unowned <= bookmarks && l.assigner.events <= 2*max(l.others.events, 1)
			}
			fmt.Fprintf(w, "\nthe assigner's cost does not rise with the update rate (at most %d events, bookmarks, on its unowned watch; "+
				"its events ≤ 2 × the others' mean): %s\n", bookmarks, yes(ok))
		}
		if len(f.joins) > 0 {
			fmt.Fprintln(w)
			cells := []string{"figure"}
			moves := append(slices.Clone(f.joins), *f.leave)
			for _, m := range moves {
				what := "join"
				if m.replicasAfter < m.replicasBefore {
					what = "leave"
				}
				cells = append(cells, fmt.Sprintf("%s (%d → %d)", what, m.replicasBefore, m.replicasAfter))
			}
			row(append(cells, "target", "met")...)
			row(append(append([]string{"---"}, slices.Repeat([]string{"---:"}, len(moves))...), "---", "---")...)
			per := func(figure, format string, v func(rebalanceFigures) float64) []string {
				out := []string{figure}
				for _, m := range moves {
					out = append(out, fmt.Sprintf(format, v(m)))
				}
				return out
			}
			row(append(per("objects moved", "%.0f", func(m rebalanceFigures) float64 { return float64(m.moved) }), "", "")...)
			row(append(per("moves the hashing asks for", "%.0f", func(m rebalanceFigures) float64 { return float64(m.expected) }), "", "")...)
			ok := true
			for _, m := range moves {
				ok = ok && m.writesPerMoved() >= 0.995 && m.writesPerMoved() <= 1.005
			}
			row(append(per("writes to objects per moved object", "%.3f", rebalanceFigures.writesPerMoved), "1.0", yes(ok))...)
			row(append(per("writes to Leases", "%.0f", func(m rebalanceFigures) float64 { return float64(leaseWrites(m.requests)) }), "", "")...)
			row(append(per("settled after, s", "%.2f", func(m rebalanceFigures) float64 { return m.took.Seconds() }), "", "")...)
		}
		if len(f.takeovers) > 0 {
			fmt.Fprintf(w, "\n%d objects, takeover (a ring of %d, a daemon per object; created in %.1f s; writes to them by the replicas after: %d):\n\n",
				f.objects, *takeoverRing, f.created["takeover"].Seconds(), f.idleWrites["takeover"])
			row("replica killed (SIGKILL)", "its objects (and adopted, not claimed)", "new assigner after, s", "first daemon elsewhere after, s", "all daemons run elsewhere after, s",
				"target", "met", "claims (labels moved) a second", "left unclaimed after 30 s")
			row("---", "---:", "---:", "---:", "---:", "---", "---", "---:", "---:")
			for _, k := range f.takeovers {
				who, elected := "a member, not the assigner", "—"
				if k.assigner {
					who, elected = "the assigner", fmt.Sprintf("%.2f", k.elected.Seconds())
				}
				objects := fmt.Sprint(k.objects)
				if k.ran > k.objects {
					objects += fmt.Sprintf(" (+%d)", k.ran-k.objects)
				}
				row(who, objects, elected, fmt.Sprintf("%.2f", k.firstHandled.Seconds()), fmt.Sprintf("%.2f", k.handled.Seconds()),
					fmt.Sprintf("≤ %.0f s", takeoverTarget.Seconds()), yes(k.handled <= takeoverTarget),
					fmt.Sprintf("%.0f", k.labelRate()), fmt.Sprint(k.unclaimed))
			}
		}
	}
}

// objectsCell says how many objects the assigner's replica and the
// others own.
func objectsCell(reps []replicaMemory) string {
	a, least, most := 0, -1, 0
	for _, rep := range reps {
		if rep.assigner {
			a = rep.objects
			continue
		}
		if least < 0 || rep.objects < least {
			least = rep.objects
		}
		most = max(most, rep.objects)
	}
	if least < 0 {
		return fmt.Sprint(a)
	}
	return fmt.Sprintf("%d / %d–%d", a, least, most)
}
