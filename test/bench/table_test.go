package bench

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kopf-go/kopf/test/bench/internal/requests"
)

// columns are the variants in the table's order, with their headings.
var columns = []struct{ variant, heading string }{
	{variantKopf, "kopf-go typed"},
	{variantForKind, "kopf-go ForKind"},
	{variantBaseline, "baseline"},
	{variantCeiling, "ceiling"},
}

// row is one line of the table: a figure per variant (absent where it
// does not apply), and the target kopf-go's variants are held against.
type row struct {
	figure string
	values map[string]float64
	format string
	target string
	// met tells whether one kopf-go variant's figure meets the target,
	// given the baseline's and the ceiling's.
	met func(kopf, baseline, ceiling float64) bool
}

// verdict is the row's "met" cell: yes when every kopf-go variant in the
// row meets the target, else which of them do not.
func (x row) verdict() string {
	if x.met == nil {
		return ""
	}
	var missed []string
	for _, c := range columns[:2] {
		if v, ok := x.values[c.variant]; ok && !x.met(v, x.values[variantBaseline], x.values[variantCeiling]) {
			missed = append(missed, strings.TrimPrefix(c.heading, "kopf-go "))
		}
	}
	if len(missed) == 0 {
		return "yes"
	}
	return "**no** (" + strings.Join(missed, ", ") + ")"
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
	// lc is a row of the lifecycle, for every variant; lcOp for the
	// operators only (the ceiling is none).
	lc := func(figure, format, target string, f func(lifecycleFigures) float64, met func(k, b, c float64) bool) row {
		x := row{figure: figure, values: map[string]float64{}, format: format, target: target, met: met}
		for _, c := range columns {
			x.values[c.variant] = med(c.variant, f)
		}
		return x
	}
	lcOp := func(figure, format, target string, f func(lifecycleFigures) float64, met func(k, b, c float64) bool) row {
		x := lc(figure, format, target, f, met)
		delete(x.values, variantCeiling)
		return x
	}
	// ops is a row of another workload, for the operators.
	ops := func(figure, format, target string, f func(v string) float64, met func(k, b, c float64) bool) row {
		x := row{figure: figure, values: map[string]float64{}, format: format, target: target, met: met}
		for _, v := range operators {
			x.values[v] = f(v)
		}
		return x
	}
	// typed is a row of kopf-go's typed variant alone.
	typed := func(figure, format, target string, value float64, met func(k, b, c float64) bool) row {
		return row{figure: figure, values: map[string]float64{variantKopf: value}, format: format, target: target, met: met}
	}
	secs := func(d time.Duration) float64 { return d.Seconds() }
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	perObject := func(x int) float64 { return float64(x) / float64(s.lifecycle) }
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
		lc("3. reads of single objects (get) per lifecycle", "%.3f", "0",
			func(l lifecycleFigures) float64 { return perObject(countVerb(l.requests, "get")) },
			func(k, _, _ float64) bool { return k == 0 }),
		lc("3. lists per lifecycle", "%.3f", "", func(l lifecycleFigures) float64 { return perObject(countVerb(l.requests, "list")) }, nil),
		lc("3. watches opened (whole run)", "%.0f", "", func(l lifecycleFigures) float64 { return float64(watches(l.requests)) }, nil),
		lc("3. discovery requests (whole run)", "%.0f", "", func(l lifecycleFigures) float64 { return float64(discovery(l.requests)) }, nil),
		lcOp("6. stale handler calls in the lifecycle", "%.0f", "kopf-go 0",
			func(l lifecycleFigures) float64 { return float64(l.stale) }, func(k, _, _ float64) bool { return k == 0 }),
		ops(fmt.Sprintf("4. create → first call, p50, ms (%d present)", s.present), "%.1f", "",
			func(v string) float64 { return ms(r.latency[v].p50) }, nil),
		ops(fmt.Sprintf("4. create → first call, p99, ms (%d present)", s.present), "%.1f", "",
			func(v string) float64 { return ms(r.latency[v].p99) }, nil),
		ops(fmt.Sprintf("5. Go heap in use, %d objects, MiB", s.memory), "%.1f", "≤ 1.2 × baseline",
			func(v string) float64 { return mib(r.memory[v].heap) }, func(k, b, _ float64) bool { return k <= 1.2*b }),
		ops(fmt.Sprintf("5. RSS, %d objects, MiB", s.memory), "%.1f", "≤ 1.2 × baseline",
			func(v string) float64 { return mib(r.memory[v].rss) }, func(k, b, _ float64) bool { return k <= 1.2*b }),
		ops(fmt.Sprintf("6. update calls per change (%d × %d updates)", s.rapid, s.updates), "%.3f", "",
			func(v string) float64 { return r.rapid[v].callsPerChange }, nil),
		ops("6. stale handler calls, rapid updates", "%.0f", "kopf-go 0",
			func(v string) float64 { return float64(r.rapid[v].stale) }, func(k, _, _ float64) bool { return k == 0 }),
	)
	// Workload 7 is the typed operator's, over its own workload 5.
	mk := r.memory[variantKopf]
	perDaemon := func(f func(memoryFigures) uint64) float64 {
		return (float64(f(r.daemons)) - float64(f(mk))) / float64(s.daemons) / 1000
	}
	rows = append(rows,
		typed(fmt.Sprintf("7. memory per daemon (live heap + stack), %d daemons, KB", s.daemons), "%.1f", "≤ 10 KB",
			perDaemon(func(m memoryFigures) uint64 { return m.live + m.stacks }), func(k, _, _ float64) bool { return k <= 10 }),
		typed("7.   of which goroutine stacks, KB", "%.1f", "", perDaemon(func(m memoryFigures) uint64 { return m.stacks }), nil),
		typed("7.   heap in use (spans, with fragmentation) + stack, KB", "%.1f", "",
			perDaemon(func(m memoryFigures) uint64 { return m.heap + m.stacks }), nil),
		typed(fmt.Sprintf("7. SIGTERM → exit with %d daemons, s", s.daemons), "%.2f", "≤ 1 s", secs(r.daemons.stop),
			func(k, _, _ float64) bool { return k <= 1 }),
	)

	fmt.Fprint(w, "| figure |")
	for _, c := range columns {
		fmt.Fprintf(w, " %s |", c.heading)
	}
	fmt.Fprint(w, " typed / baseline | ForKind / baseline | typed / ceiling | ForKind / ceiling | target | met |\n")
	fmt.Fprintf(w, "|---|%s---|---|\n", strings.Repeat("---:|", len(columns)+4))
	for _, x := range rows {
		if workload, _ := strconv.Atoi(x.figure[:1]); !s.selected(workload) {
			continue
		}
		cells := []string{x.figure}
		for _, c := range columns {
			cells = append(cells, x.cell(c.variant))
		}
		for _, over := range []string{variantBaseline, variantCeiling} {
			for _, kopf := range []string{variantKopf, variantForKind} {
				cells = append(cells, x.ratio(kopf, over))
			}
		}
		cells = append(cells, x.target, x.verdict())
		fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
	}
}

// cell is the variant's figure, or a dash where it does not apply.
func (x row) cell(variant string) string {
	v, ok := x.values[variant]
	if !ok {
		return "—"
	}
	return fmt.Sprintf(x.format, v)
}

// ratio is a variant's figure over another's, or a dash.
func (x row) ratio(variant, over string) string {
	a, okA := x.values[variant]
	b, okB := x.values[over]
	if !okA || !okB || b == 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f", a/b)
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
