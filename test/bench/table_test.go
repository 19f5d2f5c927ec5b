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

// column is a variant's column in the table.
type column struct{ variant, heading string }

// kopfColumns are kopf-go's variants, which the targets apply to.
var kopfColumns = []column{{variantKopf, "kopf-go typed"}, {variantForKind, "kopf-go ForKind"}}

// columnsOf are the table's variants in order: kopf-go's, the baselines,
// the external operator if it ran, and the ceiling.
func columnsOf(r results) []column {
	out := append(slices.Clone(kopfColumns), column{variantBaseline, "baseline typed"},
		column{variantBaselineUnstructured, "baseline unstructured"})
	if _, ran := r.lifecycle[variantExternal]; ran {
		out = append(out, column{variantExternal, *externalName})
	}
	return append(out, column{variantCeiling, "ceiling"})
}

// ratioColumns are the table's ratios: each kopf-go variant over its
// counterpart baseline, over the ceiling, and over the external
// operator if it ran.
func ratioColumns(columns []column) (headings []string, pairs [][2]string) {
	add := func(heading, kopf, over string) {
		headings = append(headings, heading)
		pairs = append(pairs, [2]string{kopf, over})
	}
	add("typed / baseline", variantKopf, variantBaseline)
	add("ForKind / baseline", variantForKind, variantBaselineUnstructured)
	add("typed / ceiling", variantKopf, variantCeiling)
	add("ForKind / ceiling", variantForKind, variantCeiling)
	for _, c := range columns {
		if c.variant == variantExternal {
			add("typed / "+c.heading, variantKopf, variantExternal)
			add("ForKind / "+c.heading, variantForKind, variantExternal)
		}
	}
	return headings, pairs
}

// row is one line of the table: a figure per variant (absent where it
// does not apply), and the target kopf-go's variants are held against.
type row struct {
	figure string
	values map[string]float64
	format string
	target string
	// met tells whether one kopf-go variant's figure meets the target,
	// given its counterpart baseline's and the ceiling's.
	met func(kopf, baseline, ceiling float64) bool
	// outside: the figure is seen from outside the operator's process, so
	// an external operator has it too.
	outside bool
}

// seenFromOutside marks a figure that an external operator has too.
func (x row) seenFromOutside() row {
	x.outside = true
	return x
}

// verdict is the row's "met" cell: yes when every kopf-go variant in the
// row meets the target, else which of them do not.
func (x row) verdict() string {
	if x.met == nil {
		return ""
	}
	var missed []string
	for _, c := range kopfColumns {
		if v, ok := x.values[c.variant]; ok && !x.met(v, x.values[counterpart(c.variant)], x.values[variantCeiling]) {
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
	columns := columnsOf(r)
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
			if len(r.lifecycle[c.variant]) > 0 {
				x.values[c.variant] = med(c.variant, f)
			}
		}
		return x
	}
	lcOp := func(figure, format, target string, f func(lifecycleFigures) float64, met func(k, b, c float64) bool) row {
		x := lc(figure, format, target, f, met)
		delete(x.values, variantCeiling)
		return x
	}
	// ops is a row of another workload, for the operators that ran it.
	ops := func(figure, format, target string, ran func(v string) bool, f func(v string) float64, met func(k, b, c float64) bool) row {
		x := row{figure: figure, values: map[string]float64{}, format: format, target: target, met: met}
		for _, c := range columns {
			if ran(c.variant) {
				x.values[c.variant] = f(c.variant)
			}
		}
		return x
	}
	latencyRan := func(v string) bool { _, ok := r.latency[v]; return ok }
	memoryRan := func(v string) bool { _, ok := r.memory[v]; return ok }
	rapidRan := func(v string) bool { _, ok := r.rapid[v]; return ok }
	// typed is a row of kopf-go's typed variant alone.
	typed := func(figure, format, target string, value float64, met func(k, b, c float64) bool) row {
		return row{figure: figure, values: map[string]float64{variantKopf: value}, format: format, target: target, met: met}
	}
	secs := func(d time.Duration) float64 { return d.Seconds() }
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	perObject := func(x int) float64 { return float64(x) / float64(s.lifecycle) }
	mib := func(b uint64) float64 { return float64(b) / (1 << 20) }
	// The targets hold kopf-go's variants against their hand-written
	// counterparts: at or below them.
	atOrBelow := func(k, b, _ float64) bool { return k <= b }

	rows := []row{
		lc(fmt.Sprintf("1. %d created → all handled, s", s.lifecycle), "%.2f", "≤ baseline",
			func(l lifecycleFigures) float64 { return secs(l.handled) }, atOrBelow).seenFromOutside(),
		lc("1. all updated → all handled, s", "%.2f", "≤ baseline",
			func(l lifecycleFigures) float64 { return secs(l.updated) }, atOrBelow).seenFromOutside(),
		lc("1. all deleted → all gone, s", "%.2f", "≤ baseline",
			func(l lifecycleFigures) float64 { return secs(l.gone) }, atOrBelow).seenFromOutside(),
		lcOp("2. operator CPU per 1,000 objects, s", "%.2f", "≤ baseline",
			func(l lifecycleFigures) float64 { return l.cpu * 1000 / float64(s.lifecycle) }, atOrBelow).seenFromOutside(),
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
		lc("3. conflicts (409) per lifecycle", "%.3f", "", func(l lifecycleFigures) float64 { return perObject(requests.Conflicts(l.requests)) }, nil),
		lc("3. watches opened (whole run)", "%.0f", "", func(l lifecycleFigures) float64 { return float64(watches(l.requests)) }, nil),
		lc("3. discovery requests (whole run)", "%.0f", "", func(l lifecycleFigures) float64 { return float64(discovery(l.requests)) }, nil),
		lcOp("6. stale handler calls in the lifecycle", "%.0f", "kopf-go 0",
			func(l lifecycleFigures) float64 { return float64(l.stale) }, func(k, _, _ float64) bool { return k == 0 }),
		ops(fmt.Sprintf("4. create → first call, p50, ms (%d present)", s.present), "%.1f", "", latencyRan,
			func(v string) float64 { return ms(r.latency[v].p50) }, nil),
		ops(fmt.Sprintf("4. create → first call, p99, ms (%d present)", s.present), "%.1f", "", latencyRan,
			func(v string) float64 { return ms(r.latency[v].p99) }, nil),
		ops(fmt.Sprintf("5. Go heap in use, %d objects, MiB", s.memory), "%.1f", "≤ baseline", memoryRan,
			func(v string) float64 { return mib(r.memory[v].heap) }, atOrBelow),
		ops(fmt.Sprintf("5. RSS, %d objects, MiB", s.memory), "%.1f", "≤ baseline", memoryRan,
			func(v string) float64 { return mib(r.memory[v].rss) }, atOrBelow).seenFromOutside(),
		ops(fmt.Sprintf("6. update calls per change (%d × %d updates)", s.rapid, s.updates), "%.3f", "", rapidRan,
			func(v string) float64 { return r.rapid[v].callsPerChange }, nil),
		ops("6. stale handler calls, rapid updates", "%.0f", "kopf-go 0", rapidRan,
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

	ratioHeadings, pairs := ratioColumns(columns)
	headings := []string{"figure"}
	for _, c := range columns {
		headings = append(headings, c.heading)
	}
	headings = append(headings, ratioHeadings...)
	headings = append(headings, "target", "met")
	fmt.Fprintf(w, "| %s |\n", strings.Join(headings, " | "))
	fmt.Fprintf(w, "|---|%s---|---|\n", strings.Repeat("---:|", len(headings)-3))
	for _, x := range rows {
		if workload, _ := strconv.Atoi(x.figure[:1]); !s.selected(workload) {
			continue
		}
		cells := []string{x.figure}
		for _, c := range columns {
			cells = append(cells, x.cell(c.variant))
		}
		for _, pair := range pairs {
			cells = append(cells, x.ratio(pair[0], pair[1]))
		}
		cells = append(cells, x.target, x.verdict())
		fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
	}
}

// cell is the variant's figure, or a dash where it does not apply.
func (x row) cell(variant string) string {
	v, ok := x.values[variant]
	if !ok || variant == variantExternal && !x.outside {
		return "—"
	}
	return fmt.Sprintf(x.format, v)
}

// ratio is a variant's figure over another's, or a dash.
func (x row) ratio(variant, over string) string {
	a, okA := x.values[variant]
	b, okB := x.values[over]
	if over == variantExternal && !x.outside {
		okB = false
	}
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
