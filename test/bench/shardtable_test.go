package bench

import (
	"fmt"
	"io"
	"strings"

	"github.com/kopf-go/kopf/test/bench/internal/requests"
)

// shareTolerance is how far above 1/N of one replica's the objects' share
// of a replica's heap may be and still count as "about 1/N".
const shareTolerance = 1.2

// writeShardingTable prints BenchmarkSharding's figures as the tables of
// docs/benchmarks.md; workloads that did not run are left out.
func writeShardingTable(w io.Writer, r shardingResults) {
	yes := func(ok bool) string {
		if ok {
			return "yes"
		}
		return "**no**"
	}
	row := func(cells ...string) { fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | ")) }
	if len(r.memory) > 0 || len(r.throughput) > 0 {
		heading := []string{"figure"}
		for _, n := range ringSizes {
			heading = append(heading, replicasOf(n))
		}
		row(append(heading, "target", "met")...)
		fmt.Fprintf(w, "|---|%s---|---|\n", strings.Repeat("---:|", len(ringSizes)))
	}
	if len(r.memory) > 0 {
		memoryRows(r, row, yes)
	}
	if len(r.throughput) > 0 {
		throughputRows(r, row, yes)
	}
	if r.join != nil {
		fmt.Fprintln(w)
		row("figure", fmt.Sprintf("join (%d → %d)", r.join.replicasBefore, r.join.replicasAfter),
			fmt.Sprintf("leave (%d → %d)", r.leave.replicasBefore, r.leave.replicasAfter), "target", "met")
		row("---", "---:", "---:", "---", "---")
		both := func(figure, format string, f func(rebalanceFigures) float64) []string {
			return []string{figure, fmt.Sprintf(format, f(*r.join)), fmt.Sprintf(format, f(*r.leave))}
		}
		row(append(both(fmt.Sprintf("objects moved (of %d)", r.sizes.rebalance), "%.0f",
			func(f rebalanceFigures) float64 { return float64(f.moved) }), "", "")...)
		row(append(both("moves the hashing asks for", "%.0f",
			func(f rebalanceFigures) float64 { return float64(f.expected) }), "", "")...)
		row(append(both("writes to objects per moved object", "%.2f", rebalanceFigures.writesPerMoved),
			"≈ 2 or fewer", yes(r.join.writesPerMoved() <= 2.05 && r.leave.writesPerMoved() <= 2.05))...)
		row(append(both("writes to objects, all replicas", "%.0f",
			func(f rebalanceFigures) float64 { return float64(objectWrites(f.requests)) }), "", "")...)
		row(append(both("writes to Leases, all replicas", "%.0f",
			func(f rebalanceFigures) float64 { return float64(leaseWrites(f.requests)) }), "", "")...)
		row(append(both("all writes", "%.0f", func(f rebalanceFigures) float64 { return float64(countWrites(f.requests)) }), "", "")...)
		row(append(both("reads (get, list, watch), all replicas", "%.0f",
			func(f rebalanceFigures) float64 { return float64(reads(f.requests)) }), "", "")...)
		row(append(both("settled after, s", "%.2f", func(f rebalanceFigures) float64 { return f.took.Seconds() }), "", "")...)
		fmt.Fprintf(w, "\njoin: %s\nleave: %s\n", formatCounts(r.join.requests), formatCounts(r.leave.requests))
	}
	if len(r.takeovers) > 0 {
		fmt.Fprintln(w)
		row("replica killed (SIGKILL)", "replicas", "its objects", "new assigner after, s", "first daemon elsewhere after, s",
			"all daemons run elsewhere after, s", "target", "met", "claims (labels moved) a second")
		row("---", "---:", "---:", "---:", "---:", "---:", "---", "---", "---:")
		for _, f := range r.takeovers {
			who, elected := "a member, not the assigner", "—"
			if f.assigner {
				who, elected = "the assigner", fmt.Sprintf("%.2f", f.elected.Seconds())
			}
			row(who, fmt.Sprint(f.replicasBefore), fmt.Sprint(f.objects), elected, fmt.Sprintf("%.2f", f.firstHandled.Seconds()),
				fmt.Sprintf("%.2f", f.handled.Seconds()), "≤ 25 s", yes(f.handled.Seconds() <= 25), fmt.Sprintf("%.0f", f.labelRate()))
		}
	}
}

func memoryRows(r shardingResults, row func(...string), yes func(bool) string) {
	one := r.memory[1]
	oneShare, _ := one.meanMax(cacheOf)
	cells := func(figure string, f func(ringMemoryFigures) string, target, met string) {
		out := []string{figure}
		for _, n := range ringSizes {
			if m, ok := r.memory[n]; ok {
				out = append(out, f(m))
			} else {
				out = append(out, "—")
			}
		}
		row(append(out, target, met)...)
	}
	meanMax := func(figure func(replicaMemory) float64) func(ringMemoryFigures) string {
		return func(m ringMemoryFigures) string {
			mean, most := m.meanMax(figure)
			if len(m.replicas) == 1 {
				return fmt.Sprintf("%.1f", mean)
			}
			return fmt.Sprintf("%.1f (%.1f)", mean, most)
		}
	}
	n := r.sizes.memory
	cells(fmt.Sprintf("Go heap in use per replica, %d objects, mean (max), MiB", n), meanMax(heapOf), "", "")
	cells("RSS per replica, mean (max), MiB", meanMax(rssOf), "", "")
	cells("heap in use before any object, mean (max), MiB", meanMax(emptyOf), "", "")
	meanOK, maxOK := true, true
	share := func(m ringMemoryFigures) string {
		if oneShare == 0 {
			return "—"
		}
		mean, most := m.meanMax(cacheOf)
		k := float64(len(m.replicas))
		meanOK = meanOK && mean*k <= shareTolerance*oneShare
		maxOK = maxOK && most*k <= shareTolerance*oneShare
		if k == 1 {
			return fmt.Sprintf("%.1f", mean)
		}
		return fmt.Sprintf("%.1f (%.1f): %.2f (%.2f) × N", mean, most, mean*k/oneShare, most*k/oneShare)
	}
	// The verdict needs the cells first.
	var shareCells []string
	for _, k := range ringSizes {
		if m, ok := r.memory[k]; ok {
			shareCells = append(shareCells, share(m))
		} else {
			shareCells = append(shareCells, "—")
		}
	}
	met := yes(meanOK && maxOK)
	if meanOK && !maxOK {
		met = "mean yes, **max no**"
	}
	row(append(append([]string{"the objects' share of the heap (with − before), mean (max), MiB; × N over 1 replica's"}, shareCells...),
		fmt.Sprintf("≈ 1/N of 1 replica's (≤ %.1f × 1/N)", shareTolerance), met)...)
	cells("objects per replica, fewest–most", func(m ringMemoryFigures) string {
		least, most := n, 0
		for _, rep := range m.replicas {
			least, most = min(least, rep.objects), max(most, rep.objects)
		}
		return fmt.Sprintf("%d–%d", least, most)
	}, "", "")
}

func throughputRows(r shardingResults, row func(...string), yes func(bool) string) {
	one := r.throughput[1]
	ceiling := 0.0
	if r.ceiling != nil {
		ceiling = r.ceiling.perSecond()
	}
	rates, ratios := []string{fmt.Sprintf("handled objects/s, create handler %s, 16 workers per replica, %d objects",
		*handlerDelay, r.sizes.throughput)}, []string{"× 1 replica's"}
	ok := true
	for _, n := range ringSizes {
		f, ran := r.throughput[n]
		if !ran {
			rates, ratios = append(rates, "—"), append(ratios, "—")
			continue
		}
		rates = append(rates, fmt.Sprintf("%.1f", f.perSecond()))
		if one.objects == 0 {
			ratios = append(ratios, "—")
			continue
		}
		ratios = append(ratios, fmt.Sprintf("%.2f", f.perSecond()/one.perSecond()))
		want := 0.9 * float64(n) * one.perSecond()
		if ceiling > 0 {
			want = min(want, 0.9*ceiling)
		}
		ok = ok && f.perSecond() >= want
	}
	target := "≥ 0.9 × N × 1 replica's, up to the API server's limit"
	if ceiling > 0 {
		target += fmt.Sprintf(" (%.0f objects/s with the same writes and no operator)", ceiling)
	}
	row(append(rates, target, yes(ok))...)
	row(append(ratios, "", "")...)
	labelled := []string{"all owner labels written after, s"}
	handled := []string{"all handled after, s"}
	writes := []string{"writes per object, all replicas"}
	gets := []string{"reads of single objects (get) per object, all replicas (not Leases)"}
	conflicts := []string{"conflicts (409) per object, all replicas"}
	for _, n := range ringSizes {
		if f, ran := r.throughput[n]; ran {
			per := func(x int) string { return fmt.Sprintf("%.3f", float64(x)/float64(f.objects)) }
			labelled = append(labelled, fmt.Sprintf("%.2f", f.labelled.Seconds()))
			handled = append(handled, fmt.Sprintf("%.2f", f.elapsed.Seconds()))
			writes = append(writes, fmt.Sprintf("%.2f", float64(countWrites(f.requests))/float64(f.objects)))
			gets = append(gets, per(objectGets(f.requests)))
			conflicts = append(conflicts, per(requests.Conflicts(f.requests)))
		} else {
			labelled, handled, writes = append(labelled, "—"), append(handled, "—"), append(writes, "—")
			gets, conflicts = append(gets, "—"), append(conflicts, "—")
		}
	}
	row(append(handled, "", "")...)
	row(append(labelled, "", "")...)
	row(append(writes, "", "")...)
	row(append(gets, "", "")...)
	row(append(conflicts, "", "")...)
}
