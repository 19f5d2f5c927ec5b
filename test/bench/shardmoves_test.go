package bench

import (
	"cmp"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/kopf-go/kopf/internal/ring"
	"github.com/kopf-go/kopf/test/bench/internal/kex"
	"github.com/kopf-go/kopf/test/bench/internal/requests"
	"github.com/kopf-go/kopf/test/bench/internal/stats"
)

// rebalanceFigures are what one rebalance of a ring cost.
type rebalanceFigures struct {
	replicasBefore, replicasAfter int
	// expected is how many objects the hashing moves; moved how many
	// owner labels the observer saw change from one member to another.
	expected, moved int
	// took runs from the joining replica's start (the leaving one's
	// SIGTERM) until every object is where the hashing puts it, with no
	// handover pending.
	took time.Duration
	// requests are every replica's, the joining or leaving one's
	// included, from just before the change until all are idle after it.
	requests map[string]int
}

// ringRebalance has a ring of 3 replicas handle n objects, then starts a
// 4th replica and lets the ring settle, then stops that one gracefully
// and lets the ring settle again.
func ringRebalance(tb testing.TB, n int) (join, leave rebalanceFigures) {
	tb.Helper()
	ns := fixtures.env.Namespace(tb)
	driver := newClient(tb, nil)
	obs := observeWith(tb, ns, kex.KopfLastHandled, newRingView(ns, ringName))
	r := newBenchRing(tb, ns)
	r.start(3)
	createAll(tb, driver, ns, n, bulkWorkers)
	obs.await(tb, "all are handled", phaseTimeout, handledAll(n, 0))
	obs.expect(r.members())
	obs.await(tb, "all are placed among 3 replicas", phaseTimeout, placedAll(n))
	r.settle()

	join = rebalanceFigures{replicasBefore: 3, replicasAfter: 4}
	before, moved := r.snapshot(false), obs.ringNow().moved
	// The joiner's name is drawn when it joins: which objects it takes is
	// counted from their uids once it has, whatever has moved already.
	begin := time.Now()
	joiner := r.start(1)[0]
	join.expected = obs.hashedTo(r.members(), joiner.member)
	obs.expect(r.members())
	join.took = obs.await(tb, "all are placed among 4 replicas", phaseTimeout, placedAll(n)).Sub(begin)
	r.settle()
	join.requests = requestsBetween(before, r.snapshot(false))
	join.moved = obs.ringNow().moved - moved

	leave = rebalanceFigures{replicasBefore: 4, replicasAfter: 3}
	before, moved = r.snapshot(false), obs.ringNow().moved
	leave.expected = obs.expect(slices.DeleteFunc(r.members(), func(m string) bool { return m == joiner.member }))
	begin = time.Now()
	joiner.op.stop(tb)
	r.remove(joiner)
	leave.took = obs.await(tb, "all are placed among 3 replicas again", phaseTimeout, placedAll(n)).Sub(begin)
	r.settle()
	after := r.snapshot(false)
	after[joiner.identity] = joiner.op.finalStats(tb)
	leave.requests = requestsBetween(before, after)
	leave.moved = obs.ringNow().moved - moved

	deleteAll(tb, driver, obs, ns, n)
	r.stopAll()
	return join, leave
}

// objectWrites counts the writes to the sharded kind's objects.
func objectWrites(counts map[string]int) int {
	return countWhere(counts, func(verb, resource string) bool {
		return isWriteVerb(verb) && strings.HasPrefix(resource, kex.Resource)
	})
}

// objectConflicts counts the writes to the sharded kind that the API
// server refused with a conflict: they wrote nothing.
func objectConflicts(counts map[string]int) int { return requests.ConflictsOn(counts, kex.Resource) }

// landedObjectWrites counts the writes to the sharded kind that landed:
// two writers of one object at once (an adopter's claim, and its cycle's
// first write) may meet a conflict, which writes nothing.
func landedObjectWrites(counts map[string]int) int {
	return objectWrites(counts) - objectConflicts(counts)
}

// leaseWrites counts the writes to Leases: members' renewals and the
// assigner's election.
func leaseWrites(counts map[string]int) int {
	return countWhere(counts, func(verb, resource string) bool { return isWriteVerb(verb) && resource == "leases" })
}

// reads counts the requests that read: get, list and watch.
func reads(counts map[string]int) int {
	return countWhere(counts, func(verb, _ string) bool { return verb == "get" || verb == "list" || verb == "watch" })
}

// objectGets counts the reads of single objects of the kind.
func objectGets(counts map[string]int) int {
	return countWhere(counts, func(verb, resource string) bool {
		return verb == "get" && strings.HasPrefix(resource, kex.Resource)
	})
}

func isWriteVerb(verb string) bool {
	switch verb {
	case "create", "update", "patch", "delete", "deletecollection":
		return true
	}
	return false
}

func countWhere(counts map[string]int, match func(verb, resource string) bool) int {
	n := 0
	for key, v := range counts {
		if verb, resource, _ := strings.Cut(key, " "); match(verb, resource) {
			n += v
		}
	}
	return n
}

func (f rebalanceFigures) writesPerMoved() float64 {
	if f.moved == 0 {
		return 0
	}
	return float64(objectWrites(f.requests)) / float64(f.moved)
}

func (f rebalanceFigures) report(b *testing.B, what string) {
	b.ReportMetric(float64(f.moved), what+"-moved")
	b.ReportMetric(f.writesPerMoved(), what+"-object-writes/moved")
	b.ReportMetric(float64(countWrites(f.requests)), what+"-writes")
	b.ReportMetric(float64(reads(f.requests)), what+"-reads")
	b.ReportMetric(f.took.Seconds(), what+"-s")
	b.Logf("rebalance, %s (%d → %d replicas): %d objects moved (the hashing moves %d) in %.2f s; "+
		"writes to objects %d (%.2f per moved object), to Leases %d, all writes %d; reads %d; requests of all replicas %s",
		what, f.replicasBefore, f.replicasAfter, f.moved, f.expected, f.took.Seconds(),
		objectWrites(f.requests), f.writesPerMoved(), leaseWrites(f.requests), countWrites(f.requests),
		reads(f.requests), formatCounts(f.requests))
}

// takeoverFigures are one SIGKILLed replica's objects moving to the
// others.
type takeoverFigures struct {
	// assigner tells whether the killed replica was the ring's assigner.
	assigner       bool
	replicasBefore int
	objects        int // the killed replica's
	victim         string
	killed         time.Time
	// ran is how many daemons the killed replica ran: its objects, and
	// those it had adopted and not claimed yet (labelled with the member
	// an earlier kill retired), which must start elsewhere as well.
	ran int
	// handled runs from the SIGKILL until every object's daemon runs on
	// a live replica, firstHandled until the first of the killed
	// replica's daemons runs elsewhere (what came before is waiting out
	// the lease); elected, when the assigner was killed, until another
	// replica said it is the assigner.
	handled, firstHandled, elected time.Duration
	// labelled runs until none of its objects is labelled with it any
	// more, firstMoved until the first is labelled with another: the
	// adopters' claims (docs/sharding.md, "Adoption"), which come after
	// the takeover, at their own pace. They are watched for claimWindow
	// after the takeover at most: labelled is 0 if they did not all come
	// by then, and unclaimed is how many objects were left, at claimedBy.
	labelled, firstMoved, claimedBy time.Duration
	unclaimed                       int
	// busy is how many of the machine's cores were busy, on average, from
	// the first daemon elsewhere to the last (the API server's and etcd's
	// too): what the survivors had to start the objects with. 0 if the
	// machine's counters cannot be read.
	busy float64
	// cores is the same window's cores by process (processCPU's names):
	// where the machine's cores went while the survivors started the
	// objects.
	cores map[string]float64
	// starts are, for each survivor, what it spent on the objects it
	// started in the same window, by its own counters.
	starts []startFigures
}

// startFigures are one survivor's start of the objects it took over: from
// the first daemon elsewhere to the last, how many daemons it started,
// and its CPU and allocations meanwhile (the Go runtime's counters).
type startFigures struct {
	identity string
	started  int64
	// cpu, and the kernel's and the garbage collector's of it, seconds
	cpu, systemCPU, gcCPU float64
	bytes, allocs         uint64
	gcCycles              uint32
	faults                int64
}

// startsBetween are the survivors' starts from their stats before to
// after, by identity.
func startsBetween(before, after map[string]stats.Stats) []startFigures {
	var out []startFigures
	for identity, b := range before {
		a, ok := after[identity]
		if !ok {
			continue
		}
		out = append(out, startFigures{identity: identity, started: a.Daemons - b.Daemons, cpu: a.CPU - b.CPU, systemCPU: a.SystemCPU - b.SystemCPU, gcCPU: a.GCCPU - b.GCCPU, faults: a.MinorFaults - b.MinorFaults,
			bytes: a.TotalAlloc - b.TotalAlloc, allocs: a.Mallocs - b.Mallocs, gcCycles: a.GCCycles - b.GCCycles})
	}
	slices.SortFunc(out, func(x, y startFigures) int { return strings.Compare(x.identity, y.identity) })
	return out
}

// startsLine tells each survivor's start per object started.
func startsLine(starts []startFigures) string {
	var parts []string
	for _, s := range starts {
		if s.started <= 0 {
			parts = append(parts, fmt.Sprintf("%s started none (%.2f s of CPU)", s.identity, s.cpu))
			continue
		}
		n := float64(s.started)
		parts = append(parts, fmt.Sprintf("%s %d in %.2f s of CPU (the kernel's %.2f, %d page faults; %d collections, %.2f s): %.0f µs, %.1f KB and %.0f allocations each",
			s.identity, s.started, s.cpu, s.systemCPU, s.faults, s.gcCycles, s.gcCPU, 1e6*s.cpu/n, float64(s.bytes)/n/1024, float64(s.allocs)/n))
	}
	return strings.Join(parts, "; ")
}

// claimWindow is how long the adopters' claims are watched after a
// takeover: long enough for their rate.
const claimWindow = 30 * time.Second

// takeoverRing is how many replicas the takeover starts with
// (-takeover-replicas, 4 by default): after its two kills, two survivors
// of 4 share what the second victim ran, as after the first kill three
// did.
var takeoverRing = flag.Int("takeover-replicas", 4, "the sharding benchmarks' takeover: how many replicas the ring starts with, at least 3 (a member's kill, then the assigner's)")

// restTimeout bounds the wait for the ring to come to rest between the
// kills: the adopters' claims, 50 a second each.
const restTimeout = 20 * time.Minute

// ringTakeover has a ring of takeoverRing replicas, with a daemon for
// every object, handle n objects; then it kills a replica that is not
// the assigner with SIGKILL, and once the ring is at rest again (every
// object claimed by a live member, the standby caches listed), it kills
// the assigner. A kill before the claims are done is another case
// (docs/sharding.md, "A second death soon after a takeover").
func ringTakeover(tb testing.TB, n int) []takeoverFigures {
	tb.Helper()
	ns := fixtures.env.Namespace(tb)
	driver := newClient(tb, nil)
	obs := observeWith(tb, ns, kex.KopfLastHandled, newRingView(ns, ringName))
	r := newBenchRing(tb, ns, "--daemons")
	r.start(*takeoverRing)
	createAll(tb, driver, ns, n, bulkWorkers)
	obs.await(tb, "all are handled", phaseTimeout, handledAll(n, 0))
	r.waitDaemons(n, phaseTimeout)
	out := r.killTwice(obs, n, func(takeoverFigures) {})
	deleteAll(tb, driver, obs, ns, n)
	r.stopAll()
	return out
}

// killTwice kills a member that is not the assigner, waits for the ring
// to be at rest, and kills the assigner; n is how many daemons run, and
// each kill's figures are told as they come.
func (r *benchRing) killTwice(obs *observer, n int, tell func(takeoverFigures)) []takeoverFigures {
	r.tb.Helper()
	if len(r.replicas) < 3 {
		r.tb.Fatalf("a takeover of a member and then of the assigner needs 3 replicas at least, not %d (-takeover-replicas)", len(r.replicas))
	}
	var out []takeoverFigures
	for i, killAssigner := range []bool{false, true} {
		if i > 0 {
			r.rest(obs, out[i-1])
		}
		f := r.kill(obs, r.victim(killAssigner), n)
		tell(f)
		out = append(out, f)
	}
	return out
}

// rest waits, after a kill, until no object is labelled with the killed
// member (the adopters' claims are done), the standby pause since the
// takeover began is over, and the replicas are idle (the standby caches
// that the pause held back have listed).
func (r *benchRing) rest(obs *observer, after takeoverFigures) {
	r.tb.Helper()
	deadline := time.Now().Add(restTimeout)
	for obs.ownedBy(after.victim) > 0 {
		if time.Now().After(deadline) {
			r.tb.Fatalf("%d objects are still labelled with the killed %s after %s", obs.ownedBy(after.victim), after.victim, restTimeout)
		}
		time.Sleep(time.Second)
	}
	time.Sleep(time.Until(after.killed.Add(after.firstHandled + standbyPause)))
	r.settle()
}

// standbyPause is how long a member adds no standby cache after a takeover
// began: two lease durations (internal/ring/share), at the default one.
const standbyPause = 2 * ring.DefaultLeaseDuration

// victim is the replica to kill: the assigner, or a replica that is not.
func (r *benchRing) victim(assigner bool) *replica {
	r.tb.Helper()
	a := r.assigner()
	if a == nil {
		r.tb.Fatal("no running replica is the ring's assigner")
	}
	if assigner {
		return a
	}
	if r.replicas[0] != a {
		return r.replicas[0]
	}
	return r.replicas[1]
}

// kill sends SIGKILL to a replica and times its objects until they are
// labelled with others and until their daemons run on others.
func (r *benchRing) kill(obs *observer, victim *replica, n int) takeoverFigures {
	r.tb.Helper()
	f := takeoverFigures{assigner: victim == r.assigner(), replicasBefore: len(r.replicas), objects: obs.ownedBy(victim.member)}
	terms := map[*replica]int{}
	for _, rep := range r.replicas {
		terms[rep] = strings.Count(rep.op.proc.Output(), assignerLine)
	}
	f.ran, f.victim = int(victim.op.read(r.tb, "").Daemons), victim.member
	begin := time.Now()
	f.killed = begin
	victim.op.proc.Kill()
	r.remove(victim)
	profiled := r.profileTakeover(victim)
	defer profiled()
	deadline := begin.Add(phaseTimeout)
	claims := time.Time{} // the end of the claims' window, once taken over
	var startAt time.Time // the first daemon elsewhere, and the machine's CPU seconds then
	var startCPU float64
	var startProcs map[int]namedCPU
	var startStats map[string]stats.Stats
	for claims.IsZero() || f.labelled == 0 && time.Now().Before(claims) {
		now := time.Now()
		for _, rep := range r.replicas {
			if f.assigner && f.elected == 0 && strings.Count(rep.op.proc.Output(), assignerLine) > terms[rep] {
				f.elected = now.Sub(begin)
			}
		}
		if f.firstMoved == 0 && obs.ownedBy(victim.member) < f.objects {
			f.firstMoved = now.Sub(begin)
		}
		if f.labelled == 0 && obs.ownedBy(victim.member) == 0 {
			f.labelled = now.Sub(begin)
		}
		snap := r.snapshot(false)
		if running := daemonsIn(snap); f.handled == 0 && running >= n {
			f.handled = now.Sub(begin)
			if busy, ok := machineCPU(); ok && startCPU > 0 {
				f.busy = (busy - startCPU) / now.Sub(startAt).Seconds()
				f.cores = coresSince(startProcs, r.processCPU(), now.Sub(startAt))
			}
			f.starts = startsBetween(startStats, snap)
		} else if f.firstHandled == 0 && running > n-f.ran {
			f.firstHandled = now.Sub(begin)
			startAt = now
			startCPU, _ = machineCPU()
			startProcs = r.processCPU()
			startStats = snap
		}
		if claims.IsZero() && f.handled != 0 && (!f.assigner || f.elected != 0) {
			claims = now.Add(claimWindow)
		}
		if claims.IsZero() && now.After(deadline) {
			r.tb.Fatalf("the killed replica's objects were not all taken over within %s: %d daemons of %d run", phaseTimeout, daemonsIn(snap), n)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if f.firstHandled == 0 {
		f.firstHandled = f.handled
	}
	f.unclaimed, f.claimedBy = obs.ownedBy(victim.member), time.Since(begin)
	return f
}

// takeoverProfile is how long the survivors' CPU is profiled from a kill
// on, with -takeover-profiles: by default past a lease duration, the
// election, the start of the adopted objects' daemons and the first
// claims. 18 s ends before the claims of the assigner's kill, which begin
// 5 s after its epoch, and so profiles the start alone.
var takeoverProfile = flag.Duration("takeover-profile-for", 40*time.Second, "the sharding benchmarks, with -takeover-profiles: how long from each kill the survivors and the API server are profiled")

// takeoverProfiles, if set, is where profileTakeover writes.
var takeoverProfiles = flag.String("takeover-profiles", "", "the sharding benchmarks: profile every survivor's CPU through each takeover, into this directory (apart from -profiles, whose whole-run profiles would refuse it)")

// takeoverTrace, with -takeover-profiles, also has every survivor trace its
// execution (go tool trace) over the stretch where a lease ends: from
// takeoverTraceFrom after the kill, for takeoverTraceFor.
var takeoverTrace = flag.Bool("takeover-trace", false, "the sharding benchmarks, with -takeover-profiles: also an execution trace of every survivor from 12 s to 30 s after each kill (go tool trace)")

const (
	takeoverTraceFrom = 12 * time.Second
	takeoverTraceFor  = 18 * time.Second
)

// profileTakeover, with -takeover-profiles, has every survivor profile its
// CPU from the kill on, into <dir>/<namespace>-takeover-<victim>-<identity>.cpu,
// with its allocations before and after (.allocs0, .allocs1; and, with
// -takeover-trace, traces it into .trace), and returns a function
// that waits for the profiles.
func (r *benchRing) profileTakeover(victim *replica) func() {
	if *takeoverProfiles == "" {
		return func() {}
	}
	var wg sync.WaitGroup
	for _, rep := range r.replicas {
		base := strings.TrimSuffix(rep.op.stats, "/stats") + "/debug/pprof/"
		path := filepath.Join(*takeoverProfiles, fmt.Sprintf("%s-takeover-%s-%s", r.ns, victim.identity, rep.identity))
		fetch := func(what, suffix string) {
			if err := fetchTo(base+what, path+suffix); err != nil {
				r.tb.Errorf("profile the takeover on %s: %v", rep.identity, err)
			}
		}
		wg.Go(func() {
			// The allocations over the window are the second profile less
			// the first (go tool pprof -base), each taken after a
			// collection (a heap profile counts what the last completed
			// one saw); so are, with the operators' -contention, the
			// blocking and the locks (without, both are empty).
			fetch("allocs?gc=1", ".allocs0")
			fetch("block", ".block0")
			fetch("mutex", ".mutex0")
			// What /proc counts of the replica's CPU over the profile's
			// window, beside what the profile samples (go tool pprof
			// -top: Total samples).
			pid := rep.op.proc.Pid()
			_, before, _ := procCPU(pid)
			fetch(fmt.Sprintf("profile?seconds=%d", int((*takeoverProfile).Seconds())), ".cpu")
			if _, after, ok := procCPU(pid); ok && before > 0 {
				r.tb.Logf("profile of %s through the takeover of %s: /proc counts %.2f s of its CPU over the profile's window (%s)",
					rep.identity, victim.identity, after-before, path+".cpu")
			}
			fetch("allocs?gc=1", ".allocs1")
			fetch("block", ".block1")
			fetch("mutex", ".mutex1")
		})
		if *takeoverTrace {
			wg.Go(func() {
				time.Sleep(takeoverTraceFrom)
				fetch(fmt.Sprintf("trace?seconds=%d", int(takeoverTraceFor.Seconds())), ".trace")
			})
		}
	}
	// The API server's CPU over the same window, with the control plane's
	// credentials.
	wg.Go(func() {
		path := filepath.Join(*takeoverProfiles, fmt.Sprintf("%s-takeover-%s-kube-apiserver.cpu", r.ns, victim.identity))
		if err := fetchAPIServerProfile(int((*takeoverProfile).Seconds()), path); err != nil {
			r.tb.Errorf("profile the API server through the takeover: %v", err)
		}
	})
	return wg.Wait
}

// fetchAPIServerProfile writes the API server's CPU profile of the next
// seconds into path (its /debug/pprof, which kube-apiserver serves to an
// administrator).
func fetchAPIServerProfile(seconds int, path string) error {
	cfg := fixtures.env.Config
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return err
	}
	httpClient.Timeout = time.Duration(seconds+30) * time.Second
	return fetchWith(httpClient, strings.TrimSuffix(cfg.Host, "/")+fmt.Sprintf("/debug/pprof/profile?seconds=%d", seconds), path)
}

// fetchTo writes what url answers into path.
func fetchTo(url, path string) error { return fetchWith(http.DefaultClient, url, path) }

// fetchWith writes what url answers to c into path.
func fetchWith(c *http.Client, url, path string) error {
	resp, err := c.Get(url)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// machineCPU is the CPU time, in seconds, that the machine's cores have
// been busy since it booted (/proc/stat: all but idle and iowait).
func machineCPU() (float64, bool) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, false
	}
	line, _, _ := strings.Cut(string(data), "\n")
	fields := strings.Fields(line)
	if len(fields) < 8 || fields[0] != "cpu" {
		return 0, false
	}
	var busy float64
	for i, f := range fields[1:] {
		if i == 3 || i == 4 { // idle, iowait
			continue
		}
		v, err := strconv.ParseFloat(f, 64)
		if err != nil {
			return 0, false
		}
		busy += v
	}
	const ticks = 100 // USER_HZ on Linux
	return busy / ticks, true
}

// processCPU is the CPU time, in seconds, that every process of the
// machine has used, by pid, with its name: the replicas by identity, this
// test process as "bench", and the others by their command
// (kube-apiserver, etcd, ...).
func (r *benchRing) processCPU() map[int]namedCPU {
	names := map[int]string{os.Getpid(): "bench"}
	for _, rep := range r.replicas {
		names[rep.op.proc.Pid()] = rep.identity
	}
	out := map[int]namedCPU{}
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		comm, used, ok := procCPU(pid)
		if !ok {
			continue // gone meanwhile
		}
		name, ok := names[pid]
		if !ok {
			name = comm
		}
		out[pid] = namedCPU{name: name, used: used}
	}
	return out
}

// procCPU is the process's command and the CPU time, in seconds, that it
// has used itself (utime and stime, fields 14-15); false if it cannot be
// read (gone, say).
func procCPU(pid int) (comm string, used float64, ok bool) {
	comm, fields, err := procStat(pid)
	if err != nil {
		return "", 0, false
	}
	used, err = cpuSeconds(fields[11:13])
	return comm, used, err == nil
}

// namedCPU is one process's name and the CPU time it has used, seconds.
type namedCPU struct {
	name string
	used float64
}

// coresSince is how many cores each process used on average over the
// window, from two readings of processCPU, summed by the name of the
// later; those under 0.05 are left out. Each process counts by its pid:
// the kernel's workers take the name of the work queue they serve, and
// one renamed meanwhile must not count its whole life under its new name.
func coresSince(before, after map[int]namedCPU, window time.Duration) map[string]float64 {
	byName := map[string]float64{}
	for pid, now := range after {
		byName[now.name] += now.used - before[pid].used // a process begun meanwhile: all of it
	}
	out := map[string]float64{}
	for name, used := range byName {
		if cores := used / window.Seconds(); cores >= 0.05 {
			out[name] = cores
		}
	}
	return out
}

// coresLine says coresSince's figures, the largest first.
func coresLine(cores map[string]float64) string {
	names := slices.Collect(maps.Keys(cores))
	slices.SortFunc(names, func(a, b string) int { return cmp.Compare(cores[b], cores[a]) })
	parts := make([]string, 0, len(names))
	for _, name := range names {
		parts = append(parts, fmt.Sprintf("%s %.2f", name, cores[name]))
	}
	return strings.Join(parts, ", ")
}

// assignerLine is what a replica logs when its term as the assigner
// begins.
const assignerLine = "This replica is the ring's assigner."

// daemons counts the daemons running on the running replicas.
func (r *benchRing) daemons() int { return daemonsIn(r.snapshot(false)) }

// daemonsIn is how many daemons the replicas of a snapshot run.
func daemonsIn(snap map[string]stats.Stats) int {
	n := int64(0)
	for _, s := range snap {
		n += s.Daemons
	}
	return int(n)
}

// waitDaemons waits until the running replicas run n daemons.
func (r *benchRing) waitDaemons(n int, timeout time.Duration) {
	r.tb.Helper()
	deadline := time.Now().Add(timeout)
	for r.daemons() < n {
		if time.Now().After(deadline) {
			r.tb.Fatalf("the replicas run %d daemons after %s, want %d", r.daemons(), timeout, n)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (f takeoverFigures) report(b *testing.B) {
	who := "member"
	if f.assigner {
		who = "assigner"
	}
	b.ReportMetric(f.handled.Seconds(), who+"-killed-handled-s")
	b.ReportMetric(f.labelRate(), who+"-killed-claims/s")
	elected := ""
	if f.assigner {
		b.ReportMetric(f.elected.Seconds(), "assigner-elected-s")
		elected = fmt.Sprintf("; another replica became the assigner after %.2f s", f.elected.Seconds())
	}
	b.Logf("takeover, the %s of %d replicas killed (SIGKILL, lease 15 s): all its %d objects' daemons running on the others after %.2f s "+
		"(the first after %.2f s)%s%s; %s", who, f.replicasBefore, f.objects, f.handled.Seconds(), f.firstHandled.Seconds(), f.adoptedSummary(), elected, f.claimSummary())
}
