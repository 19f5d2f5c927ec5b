package bench

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/kopf-go/kopf/test/bench/internal/requests"
)

// rounds is how many times the lifecycle workload runs per variant, the
// variants alternating; the table shows the medians.
var rounds = flag.Int("rounds", 4, "rounds of the lifecycle workload (workloads 1-3) per variant; even numbers balance the variants' positions")

// only, if set, limits BenchmarkOperators to some workloads, e.g. "1,5".
// Workloads 1-3 run together, and 7 needs 5.
var only = flag.String("workloads", "", "run only these workloads (comma-separated numbers, 1-7)")

// onlyVariants, if set, limits the variants that run, e.g. "forkind" to
// profile the quick start alone.
var onlyVariants = flag.String("variants", "", "run only these variants (comma-separated: kopf, forkind, baseline, ceiling, external)")

// chosen are the variants to run, in order: all of these, or those of
// -variants.
func chosen(variants []string) []string {
	if *onlyVariants == "" {
		return variants
	}
	wanted := strings.Split(*onlyVariants, ",")
	return slices.DeleteFunc(variants, func(v string) bool { return !slices.Contains(wanted, v) })
}

// selected tells whether a workload is to run.
func (s sizes) selected(workload int) bool {
	if len(s.workloads) == 0 {
		return true
	}
	switch workload {
	case 1, 2, 3:
		return slices.ContainsFunc([]int{1, 2, 3}, func(w int) bool { return slices.Contains(s.workloads, w) })
	case 5:
		return slices.Contains(s.workloads, 5) || slices.Contains(s.workloads, 7)
	}
	return slices.Contains(s.workloads, workload)
}

func parseWorkloads(list string) ([]int, error) {
	var out []int
	for _, field := range strings.Split(list, ",") {
		if field = strings.TrimSpace(field); field == "" {
			continue
		}
		w, err := strconv.Atoi(field)
		if err != nil || w < 1 || w > 7 {
			return nil, fmt.Errorf("-workloads: %q is not a workload (1-7)", field)
		}
		out = append(out, w)
	}
	return out, nil
}

// sizes are a run's numbers of objects.
type sizes struct {
	lifecycle int // workloads 1-3
	rounds    int
	present   int // workload 4: objects there before the probes
	probes    int // workload 4: objects created one by one
	memory    int // workload 5
	rapid     int // workload 6: objects
	updates   int // workload 6: updates of each
	daemons   int // workload 7
	// workloads are the ones to run; all if empty.
	workloads []int
}

// fullSizes are the issue's; smokeSizes keep the harness working in
// `make test`.
var (
	fullSizes  = sizes{lifecycle: 1000, rounds: 4, present: 1000, probes: 200, memory: 10_000, rapid: 1000, updates: 10, daemons: 10_000}
	smokeSizes = sizes{lifecycle: 10, rounds: 1, present: 10, probes: 5, memory: 20, rapid: 10, updates: 3, daemons: 20}
)

// results are a harness run's figures, per variant.
type results struct {
	sizes     sizes
	lifecycle map[string][]lifecycleFigures
	latency   map[string]latencyFigures
	rapid     map[string]rapidFigures
	memory    map[string]memoryFigures
	daemons   memoryFigures
	// rounds describe each run of the lifecycle, in the order they ran.
	rounds []string
}

// roundOrder is the order of the variants in a round of the lifecycle.
// A round runs slower as it goes on (etcd keeps every deleted object's
// history until it compacts), so each pair of rounds runs the variants
// once forwards and once backwards, rotated by one more every pair: over
// an even number of rounds every variant has the same mean position.
func roundOrder(variants []string, round int) []string {
	n := len(variants)
	out := make([]string, n)
	for k := range n {
		out[k] = variants[(k+round/2)%n]
	}
	if round%2 == 1 {
		slices.Reverse(out)
	}
	return out
}

// runHarness runs every workload for every variant it applies to,
// alternating the variants, on the fixtures' control plane.
func runHarness(tb testing.TB, s sizes) results {
	setup(tb)
	r := results{sizes: s, lifecycle: map[string][]lifecycleFigures{}, latency: map[string]latencyFigures{},
		rapid: map[string]rapidFigures{}, memory: map[string]memoryFigures{}}
	variants := chosen(append(withExternal(slices.Clone(operators)), variantCeiling))
	for round := range s.rounds {
		if !s.selected(1) {
			break
		}
		for _, v := range roundOrder(variants, round) {
			f := lifecycle(tb, v, s.lifecycle)
			r.lifecycle[v] = append(r.lifecycle[v], f)
			r.rounds = append(r.rounds, fmt.Sprintf("round %d, %s: handled %.2f s, updated %.2f s, gone %.2f s, CPU %.2f s",
				round+1, v, f.handled.Seconds(), f.updated.Seconds(), f.gone.Seconds(), f.cpu))
		}
	}
	for _, v := range chosen(withExternal(slices.Clone(operators))) {
		// An external operator reports no handler calls: workloads 4 and
		// 6 need them.
		if s.selected(4) && v != variantExternal {
			r.latency[v] = latency(tb, v, s.present, s.probes)
		}
		if s.selected(6) && v != variantExternal {
			r.rapid[v] = rapidUpdates(tb, v, s.rapid, s.updates)
		}
		if s.selected(5) {
			r.memory[v] = memory(tb, v, s.memory, false)
		}
	}
	if s.selected(7) && slices.Contains(chosen([]string{variantKopf}), variantKopf) {
		r.daemons = memory(tb, variantKopf, s.daemons, true)
	}
	return r
}

// BenchmarkOperators runs the harness at the sizes and prints
// its table; docs/benchmarks.md records it. `make bench` runs it.
func BenchmarkOperators(b *testing.B) {
	for b.Loop() {
		s := fullSizes
		s.rounds = *rounds
		var err error
		if s.workloads, err = parseWorkloads(*only); err != nil {
			b.Fatal(err)
		}
		r := runHarness(b, s)
		writeTable(os.Stdout, r)
		fmt.Println()
		for _, line := range r.rounds {
			fmt.Println(line)
		}
	}
}

// TestHarnessSmoke runs the harness with a few objects, so that it
// cannot rot, and checks what is not a matter of time: every variant
// handled every object, kopf-go (typed and as the quick start) wrote no
// more than the safe minimum per lifecycle, read no object from the API
// server, never ran a handler on a stale body, and left no daemon
// unstarted.
func TestHarnessSmoke(t *testing.T) {
	r := runHarness(t, smokeSizes)
	var table strings.Builder
	writeTable(&table, r)
	t.Log("\n" + table.String())

	n := smokeSizes.lifecycle
	for _, v := range []string{variantKopf, variantForKind} {
		kopf := r.lifecycle[v][0]
		if writes := countWrites(kopf.requests); writes > safeWrites*n {
			t.Errorf("%s made %d writes for %d lifecycles, more than %d each: %v", v, writes, n, safeWrites, kopf.requests)
		}
		if gets := countVerb(kopf.requests, "get"); gets != 0 {
			t.Errorf("%s read objects from the API server %d times in %d lifecycles, want 0: %v", v, gets, n, kopf.requests)
		}
		if kopf.calls["create"] != n || kopf.calls["update"] != n || kopf.calls["delete"] != n {
			t.Errorf("%s's handler calls in the lifecycle = %v, want %d of each", v, kopf.calls, n)
		}
		if kopf.stale != 0 || r.rapid[v].stale != 0 {
			t.Errorf("%s ran handlers on stale bodies: %d in the lifecycle, %d in the rapid updates", v, kopf.stale, r.rapid[v].stale)
		}
		if calls := r.rapid[v].callsPerChange; calls <= 0 || calls > 1 {
			t.Errorf("%s's update handler ran %.2f times per change, want more than 0 and at most 1", v, calls)
		}
	}
	for v, f := range r.lifecycle {
		if v == variantExternal {
			continue // it reports no requests and no calls
		}
		if v != variantCeiling && f[0].calls["create"] < n {
			t.Errorf("the %s variant's create handler ran %d times for %d objects", v, f[0].calls["create"], n)
		}
		if countWrites(f[0].requests) == 0 {
			t.Errorf("no writes were counted for the %s variant", v)
		}
	}
	if r.daemons.daemons != int64(smokeSizes.daemons) {
		t.Errorf("%d daemons ran, want %d", r.daemons.daemons, smokeSizes.daemons)
	}
	if !strings.Contains(table.String(), "writes per lifecycle") {
		t.Error("the table lacks its rows")
	}
}

// safeWrites is the least an operator can write per lifecycle of the
// workload with a status subresource and still be safe: the finalizer
// first, the result in status, the last handled state, the last handled
// state again after the update, the finalizer's removal.
const safeWrites = 5

func countWrites(counts map[string]int) int {
	n := 0
	for key, v := range counts {
		if requests.IsWrite(key) {
			n += v
		}
	}
	return n
}

// countVerb counts the requests of one verb (get, list, patch, ...) on
// resources; discovery's requests are not counted.
func countVerb(counts map[string]int, verb string) int {
	n := 0
	for key, v := range counts {
		if keyVerb, resource, _ := strings.Cut(key, " "); keyVerb == verb && !strings.HasPrefix(resource, "/") {
			n += v
		}
	}
	return n
}

// discovery counts the requests outside resources: discovery's, which
// clients make once.
func discovery(counts map[string]int) int {
	n := 0
	for key, v := range counts {
		if _, resource, _ := strings.Cut(key, " "); strings.HasPrefix(resource, "/") {
			n += v
		}
	}
	return n
}
