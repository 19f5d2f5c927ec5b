package bench

import (
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kopf-go/kopf/test/bench/internal/requests"
)

// rounds is how many times the lifecycle workload runs per variant, the
// variants alternating; the table shows the medians.
var rounds = flag.Int("rounds", 3, "rounds of the lifecycle workload (workloads 1-3) per variant")

// only, if set, limits BenchmarkOperators to some workloads, e.g. "1,5".
// Workloads 1-3 run together, and 7 needs 5.
var only = flag.String("workloads", "", "run only these workloads (comma-separated numbers, 1-7)")

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
	fullSizes  = sizes{lifecycle: 1000, rounds: 3, present: 1000, probes: 200, memory: 10_000, rapid: 1000, updates: 10, daemons: 10_000}
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
}

// runHarness runs every workload for every variant it applies to,
// alternating the variants, on the fixtures' control plane.
func runHarness(tb testing.TB, s sizes) results {
	setup(tb)
	r := results{sizes: s, lifecycle: map[string][]lifecycleFigures{}, latency: map[string]latencyFigures{},
		rapid: map[string]rapidFigures{}, memory: map[string]memoryFigures{}}
	variants := []string{variantKopf, variantBaseline, variantCeiling}
	for round := range s.rounds {
		if !s.selected(1) {
			break
		}
		// Each round starts with another variant, so that none always
		// runs on the emptiest etcd.
		for k := range variants {
			v := variants[(round+k)%len(variants)]
			r.lifecycle[v] = append(r.lifecycle[v], lifecycle(tb, v, s.lifecycle))
		}
	}
	for _, v := range []string{variantKopf, variantBaseline} {
		if s.selected(4) {
			r.latency[v] = latency(tb, v, s.present, s.probes)
		}
		if s.selected(6) {
			r.rapid[v] = rapidUpdates(tb, v, s.rapid, s.updates)
		}
		if s.selected(5) {
			r.memory[v] = memory(tb, v, s.memory, false)
		}
	}
	if s.selected(7) {
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
	}
}

// TestHarnessSmoke runs the harness with a few objects, so that it
// cannot rot, and checks what is not a matter of time: every variant
// handled every object, kopf-go wrote no more than the safe minimum per
// lifecycle, never ran a handler on a stale body, and left no daemon
// unstarted.
func TestHarnessSmoke(t *testing.T) {
	r := runHarness(t, smokeSizes)
	var table strings.Builder
	writeTable(&table, r)
	t.Log("\n" + table.String())

	kopf := r.lifecycle[variantKopf][0]
	if writes := countWrites(kopf.requests); writes > safeWrites*smokeSizes.lifecycle {
		t.Errorf("kopf-go made %d writes for %d lifecycles, more than %d each: %v", writes, smokeSizes.lifecycle, safeWrites, kopf.requests)
	}
	if kopf.calls["create"] != smokeSizes.lifecycle || kopf.calls["update"] != smokeSizes.lifecycle || kopf.calls["delete"] != smokeSizes.lifecycle {
		t.Errorf("kopf-go's handler calls in the lifecycle = %v, want %d of each", kopf.calls, smokeSizes.lifecycle)
	}
	for v, f := range r.lifecycle {
		if v != variantCeiling && f[0].calls["create"] < smokeSizes.lifecycle {
			t.Errorf("the %s variant's create handler ran %d times for %d objects", v, f[0].calls["create"], smokeSizes.lifecycle)
		}
		if countWrites(f[0].requests) == 0 {
			t.Errorf("no writes were counted for the %s variant", v)
		}
	}
	if kopf.stale != 0 || r.rapid[variantKopf].stale != 0 {
		t.Errorf("kopf-go ran handlers on stale bodies: %d in the lifecycle, %d in the rapid updates", kopf.stale, r.rapid[variantKopf].stale)
	}
	if calls := r.rapid[variantKopf].callsPerChange; calls <= 0 || calls > 1 {
		t.Errorf("kopf-go's update handler ran %.2f times per change, want more than 0 and at most 1", calls)
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

func countReads(counts map[string]int) int {
	n := 0
	for key, v := range counts {
		if verb, _, _ := strings.Cut(key, " "); verb == "get" || verb == "list" {
			n += v
		}
	}
	return n
}

// row is one line of the table: a figure per variant ("" where it does
// not apply), and the target it is held against.
type row struct {
	figure                  string
	kopf, baseline, ceiling float64
	hasBaseline, hasCeiling bool
	format                  string
	target                  string
	met                     func(kopf, baseline, ceiling float64) bool
}

func writeTable(w io.Writer, r results) {
	s := r.sizes
	med := func(v string, f func(lifecycleFigures) float64) float64 {
		var xs []float64
		for _, l := range r.lifecycle[v] {
			xs = append(xs, f(l))
		}
		return median(xs)
	}
	lc := func(figure, format, target string, f func(lifecycleFigures) float64, met func(k, b, c float64) bool) row {
		return row{figure: figure, kopf: med(variantKopf, f), baseline: med(variantBaseline, f), ceiling: med(variantCeiling, f),
			hasBaseline: true, hasCeiling: true, format: format, target: target, met: met}
	}
	// lcOp is lc for figures of an operator, which the ceiling is not.
	lcOp := func(figure, format, target string, f func(lifecycleFigures) float64, met func(k, b, c float64) bool) row {
		x := lc(figure, format, target, f, met)
		x.hasCeiling = false
		return x
	}
	secs := func(d time.Duration) float64 { return d.Seconds() }
	perObject := func(n int) func(int) float64 { return func(x int) float64 { return float64(x) / float64(n) } }(s.lifecycle)
	mib := func(b uint64) float64 { return float64(b) / (1 << 20) }
	withinCeiling := func(k, _, c float64) bool { return k <= 1.10*c }

	rows := []row{
		lc(fmt.Sprintf("1. %d created → all handled, s", s.lifecycle), "%.2f", "≤ 1.10 × ceiling",
			func(l lifecycleFigures) float64 { return secs(l.handled) }, withinCeiling),
		lc("1. all updated → all handled, s", "%.2f", "≤ 1.10 × ceiling",
			func(l lifecycleFigures) float64 { return secs(l.updated) }, withinCeiling),
		lc("1. all deleted → all gone, s", "%.2f", "≤ 1.10 × ceiling",
			func(l lifecycleFigures) float64 { return secs(l.gone) }, withinCeiling),
		lcOp("2. operator CPU per 1,000 objects, s", "%.2f", "≤ 1.15 × baseline",
			func(l lifecycleFigures) float64 { return l.cpu * 1000 / float64(s.lifecycle) },
			func(k, b, _ float64) bool { return k <= 1.15*b }),
		lcOp("2. allocated per lifecycle, KB", "%.1f", "",
			func(l lifecycleFigures) float64 { return float64(l.allocated) / float64(s.lifecycle) / 1000 }, nil),
		lcOp("2. allocations per lifecycle", "%.0f", "",
			func(l lifecycleFigures) float64 { return float64(l.mallocs) / float64(s.lifecycle) }, nil),
		lc("3. writes per lifecycle", "%.2f", fmt.Sprintf("≤ baseline, ≤ %d", safeWrites),
			func(l lifecycleFigures) float64 { return perObject(countWrites(l.requests)) },
			func(k, b, _ float64) bool { return k <= b && k <= safeWrites }),
	}
	for _, key := range writeKeys(r) {
		rows = append(rows, lc("3.   "+key, "%.2f", "",
			func(l lifecycleFigures) float64 { return perObject(l.requests[key]) }, nil))
	}
	rows = append(rows,
		lc("3. reads (get, list) per lifecycle", "%.3f", "", func(l lifecycleFigures) float64 { return perObject(countReads(l.requests)) }, nil),
		lc("3. watches opened (whole run)", "%.0f", "", func(l lifecycleFigures) float64 { return float64(watches(l.requests)) }, nil),
		lcOp("6. stale handler calls in the lifecycle", "%.0f", "kopf-go 0",
			func(l lifecycleFigures) float64 { return float64(l.stale) }, func(k, _, _ float64) bool { return k == 0 }),
	)
	two := func(figure, format, target string, k, b float64, met func(k, b, c float64) bool) row {
		return row{figure: figure, kopf: k, baseline: b, hasBaseline: true, format: format, target: target, met: met}
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	lk, lb := r.latency[variantKopf], r.latency[variantBaseline]
	rk, rb := r.rapid[variantKopf], r.rapid[variantBaseline]
	mk, mb := r.memory[variantKopf], r.memory[variantBaseline]
	perDaemon := func(f func(memoryFigures) uint64) float64 {
		return (float64(f(r.daemons)) - float64(f(mk))) / float64(s.daemons) / 1000
	}
	rows = append(rows,
		two(fmt.Sprintf("4. create → first call, p50, ms (%d present)", s.present), "%.1f", "", ms(lk.p50), ms(lb.p50), nil),
		two(fmt.Sprintf("4. create → first call, p99, ms (%d present)", s.present), "%.1f", "", ms(lk.p99), ms(lb.p99), nil),
		two(fmt.Sprintf("5. Go heap in use, %d objects, MiB", s.memory), "%.1f", "≤ 1.2 × baseline", mib(mk.heap), mib(mb.heap),
			func(k, b, _ float64) bool { return k <= 1.2*b }),
		two(fmt.Sprintf("5. RSS, %d objects, MiB", s.memory), "%.1f", "≤ 1.2 × baseline", mib(mk.rss), mib(mb.rss),
			func(k, b, _ float64) bool { return k <= 1.2*b }),
		two(fmt.Sprintf("6. update calls per change (%d × %d updates)", s.rapid, s.updates), "%.3f", "", rk.callsPerChange, rb.callsPerChange, nil),
		two("6. stale handler calls, rapid updates", "%.0f", "kopf-go 0", float64(rk.stale), float64(rb.stale),
			func(k, _, _ float64) bool { return k == 0 }),
		row{figure: fmt.Sprintf("7. memory per daemon (live heap + stack), %d daemons, KB", s.daemons),
			kopf: perDaemon(func(m memoryFigures) uint64 { return m.live + m.stacks }), format: "%.1f", target: "≤ 10 KB",
			met: func(k, _, _ float64) bool { return k <= 10 }},
		row{figure: "7.   of which goroutine stacks, KB", kopf: perDaemon(func(m memoryFigures) uint64 { return m.stacks }), format: "%.1f"},
		row{figure: "7.   heap in use (spans, with fragmentation) + stack, KB",
			kopf: perDaemon(func(m memoryFigures) uint64 { return m.heap + m.stacks }), format: "%.1f"},
		row{figure: fmt.Sprintf("7. SIGTERM → exit with %d daemons, s", s.daemons), kopf: secs(r.daemons.stop), format: "%.2f", target: "≤ 1 s",
			met: func(k, _, _ float64) bool { return k <= 1 }},
	)

	fmt.Fprintf(w, "| figure | kopf-go | baseline | ceiling | kopf-go / baseline | kopf-go / ceiling | target | met |\n")
	fmt.Fprintf(w, "|---|---:|---:|---:|---:|---:|---|---|\n")
	for _, x := range rows {
		if workload, _ := strconv.Atoi(x.figure[:1]); !s.selected(workload) {
			continue
		}
		cell := func(v float64, ok bool) string {
			if !ok {
				return "—"
			}
			return fmt.Sprintf(x.format, v)
		}
		ratio := func(a, b float64, ok bool) string {
			if !ok || b == 0 {
				return "—"
			}
			return fmt.Sprintf("%.2f", a/b)
		}
		met := ""
		if x.met != nil {
			met = "yes"
			if !x.met(x.kopf, x.baseline, x.ceiling) {
				met = "**no**"
			}
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", x.figure,
			cell(x.kopf, true), cell(x.baseline, x.hasBaseline), cell(x.ceiling, x.hasCeiling),
			ratio(x.kopf, x.baseline, x.hasBaseline), ratio(x.kopf, x.ceiling, x.hasCeiling), x.target, met)
	}
}

// writeKeys are the kinds of writes any variant made in the lifecycle.
func writeKeys(r results) []string {
	var keys []string
	for _, runs := range r.lifecycle {
		for _, l := range runs {
			for key := range l.requests {
				if requests.IsWrite(key) && !slices.Contains(keys, key) {
					keys = append(keys, key)
				}
			}
		}
	}
	slices.Sort(keys)
	return keys
}

func watches(counts map[string]int) int {
	n := 0
	for key, v := range counts {
		if strings.HasPrefix(key, "watch ") {
			n += v
		}
	}
	return n
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	sorted := slices.Clone(xs)
	slices.Sort(sorted)
	if len(sorted)%2 == 1 {
		return sorted[len(sorted)/2]
	}
	return (sorted[len(sorted)/2-1] + sorted[len(sorted)/2]) / 2
}
