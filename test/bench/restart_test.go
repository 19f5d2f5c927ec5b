package bench

import (
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kopf-go/kopf/test/bench/internal/stats"
)

// The restart workload's sizes: the handled objects a fresh process
// starts over, and how many fresh processes of each variant run over
// them, in turn.
var (
	restartObjects = flag.Int("restart-objects", 1000, "BenchmarkRestart: handled objects the fresh process starts over")
	restartRuns    = flag.Int("restart-runs", 6, "BenchmarkRestart: fresh processes per variant, alternating; the table shows medians")
)

// restartOther, if set, is another build of the benchmark's operator (of
// an earlier commit, say), whose quick start starts over the same objects
// in turn with this build's: a before and after on one machine at one
// time, which the machine's drift from run to run does not blur.
var restartOther = flag.String("restart-other", "", "BenchmarkRestart: another build of test/bench/operator whose quick start runs too, in turn with this one's")

// variantForKindOther is the quick start of the -restart-other build.
const variantForKindOther = "forkind-other"

// restartVariants are the quick start and its hand-written counterpart.
var restartVariants = []string{variantForKind, variantBaselineUnstructured}

// restartRunners are the variants that start over the handled objects: those,
// and the other build's quick start if there is one.
func restartRunners() []string {
	if *restartOther == "" {
		return restartVariants
	}
	return append(slices.Clone(restartVariants), variantForKindOther)
}

// Idleness, as the restart workload takes it: no write for a second and
// less than 5% of a core busy over it.
const (
	idleWindow = time.Second
	idleCPU    = 0.05
	idlePoll   = 50 * time.Millisecond
)

// restartFigures are one fresh process's.
type restartFigures struct {
	// idle is from its start until the moment from which it stayed idle;
	// cpu its CPU time (user and system) until then, seconds.
	idle time.Duration
	cpu  float64
	// requests are all of its requests, from its start until it exited.
	requests map[string]int
	calls    map[string]int
}

// handleOnce fills a new namespace with n objects and has a first
// process of the variant handle them all, then stops it: the objects a
// fresh process of the same variant restarts over.
func handleOnce(tb testing.TB, variant string, n int) string {
	tb.Helper()
	ns := fixtures.env.Namespace(tb)
	obs := observe(tb, ns, lastHandledKey(variant))
	createAll(tb, newClient(tb, nil), ns, n, bulkWorkers)
	op := startOperator(tb, variant, ns)
	obs.await(tb, "all are handled", phaseTimeout, handledAll(n, 0))
	op.settle(tb)
	op.stop(tb)
	obs.stop()
	return ns
}

// restart starts a fresh process of the variant over a namespace of
// handled objects and measures it until it is idle.
func restart(tb testing.TB, variant, ns string, run int) restartFigures {
	tb.Helper()
	op := startOperator(tb, variant, ns)
	idle, at := op.untilIdle(tb)
	op.stop(tb)
	if *profiles != "" {
		// Each run's profile apart: <namespace>-<variant>-run<N>.cpu.
		profile := filepath.Join(*profiles, ns+"-"+variant)
		if err := os.Rename(profile+".cpu", fmt.Sprintf("%s-run%d.cpu", profile, run+1)); err != nil {
			tb.Error(err)
		}
	}
	last := op.finalStats(tb)
	return restartFigures{idle: idle.Sub(op.started), cpu: at.CPU, requests: last.Requests, calls: last.Calls}
}

// untilIdle polls the operator's stats until it has made no write and
// used less than idleCPU of a core over idleWindow, and returns when that
// window began and the stats read then.
func (op *operatorProcess) untilIdle(tb testing.TB) (time.Time, stats.Stats) {
	tb.Helper()
	type sample struct {
		at     time.Time
		stats  stats.Stats
		writes int
	}
	var samples []sample
	deadline := time.Now().Add(phaseTimeout)
	for time.Now().Before(deadline) {
		s := op.read(tb, "")
		now := sample{at: time.Now(), stats: s, writes: countWrites(s.Requests)}
		samples = append(samples, now)
		// The latest sample at least a window back.
		for i := len(samples) - 1; i >= 0; i-- {
			from := samples[i]
			span := now.at.Sub(from.at)
			if span < idleWindow {
				continue
			}
			if now.writes == from.writes && now.stats.CPU-from.stats.CPU < idleCPU*span.Seconds() {
				return from.at, from.stats
			}
			break
		}
		time.Sleep(idlePoll)
	}
	tb.Fatalf("the %s operator was not idle after %s:\n%s", op.variant, phaseTimeout, op.tail())
	return time.Time{}, stats.Stats{}
}

// restartWorkload handles n objects once per variant, then runs fresh
// processes over them, the variants in turn (balanced as the lifecycle's
// rounds are).
func restartWorkload(tb testing.TB, n, runs int) map[string][]restartFigures {
	tb.Helper()
	setup(tb)
	namespaces := map[string]string{}
	for _, v := range restartVariants {
		namespaces[v] = handleOnce(tb, v, n)
	}
	out := map[string][]restartFigures{}
	namespaces[variantForKindOther] = namespaces[variantForKind]
	for run := range runs {
		for _, v := range roundOrder(restartRunners(), run) {
			f := restart(tb, v, namespaces[v], run)
			out[v] = append(out[v], f)
			if *verbose {
				tb.Logf("run %d, %s: idle after %.2f s, CPU %.3f s, requests %v", run+1, v, f.idle.Seconds(), f.cpu, f.requests)
			}
		}
	}
	return out
}

// BenchmarkRestart measures a fresh process of the quick start over
// objects that were all handled before (a restart, or a rollout of the
// operator), against its hand-written counterpart over its own handled
// objects: the time from the process's start until it is idle, its CPU
// until then, and its requests, by verb (docs/benchmarks.md, "A restart
// over handled objects").
func BenchmarkRestart(b *testing.B) {
	for b.Loop() {
		r := restartWorkload(b, *restartObjects, *restartRuns)
		writeRestartTable(os.Stdout, r, *restartObjects)
	}
}

func writeRestartTable(w io.Writer, r map[string][]restartFigures, n int) {
	type column struct{ variant, heading string }
	columns := []column{{variantForKind, "kopf-go ForKind"}, {variantBaselineUnstructured, "baseline unstructured"}}
	ratios := [][2]string{{variantForKind, variantBaselineUnstructured}}
	if len(r[variantForKindOther]) > 0 {
		columns = append(columns, column{variantForKindOther, "ForKind, other build"})
		ratios = append(ratios, [2]string{variantForKindOther, variantBaselineUnstructured}, [2]string{variantForKind, variantForKindOther})
	}
	heading := func(v string) string {
		for _, c := range columns {
			if c.variant == v {
				return strings.TrimPrefix(c.heading, "kopf-go ")
			}
		}
		return v
	}
	med := func(v string, f func(restartFigures) float64) float64 {
		var xs []float64
		for _, x := range r[v] {
			xs = append(xs, f(x))
		}
		return median(xs)
	}
	most := func(v string, f func(restartFigures) float64) float64 {
		m := 0.0
		for _, x := range r[v] {
			m = max(m, f(x))
		}
		return m
	}
	verb := func(name string) func(restartFigures) float64 {
		return func(f restartFigures) float64 { return float64(countVerb(f.requests, name)) }
	}
	calls := func(f restartFigures) float64 {
		total := 0
		for _, c := range f.calls {
			total += c
		}
		return float64(total)
	}
	_, _ = fmt.Fprintf(w, "A fresh process over %d handled objects, %d runs of each (medians; requests: the most of any run)\n\n", n, len(r[variantForKind]))
	header := "| figure |"
	rule := "|---|"
	for _, c := range columns {
		header += " " + c.heading + " |"
		rule += "---:|"
	}
	for _, pair := range ratios {
		header += " " + heading(pair[0]) + " / " + heading(pair[1]) + " |"
		rule += "---:|"
	}
	_, _ = fmt.Fprintln(w, header+" target | met |")
	_, _ = fmt.Fprintln(w, rule+"---|---|")
	rows := []struct {
		figure, format string
		f              func(restartFigures) float64
		timed          bool // a median, held at 1.1 × the baseline's; else a count, the most of any run
		zero           bool // the count's target is 0
	}{
		{"start → idle, s", "%.2f", func(f restartFigures) float64 { return f.idle.Seconds() }, true, false},
		{"CPU until idle, s", "%.3f", func(f restartFigures) float64 { return f.cpu }, true, false},
		{"CPU per object, ms", "%.3f", func(f restartFigures) float64 { return f.cpu * 1000 / float64(n) }, true, false},
		{"writes to the objects", "%.0f", func(f restartFigures) float64 { return float64(objectWrites(f.requests)) }, false, true},
		{"reads of single objects (get)", "%.0f", verb("get"), false, true},
		{"lists", "%.0f", verb("list"), false, false},
		{"watches", "%.0f", verb("watch"), false, false},
		{"handler calls", "%.0f", calls, false, false},
	}
	for _, x := range rows {
		value := most
		if x.timed {
			value = med
		}
		line := "| " + x.figure + " |"
		for _, c := range columns {
			line += fmt.Sprintf(" "+x.format+" |", value(c.variant, x.f))
		}
		for _, pair := range ratios {
			k, b := value(pair[0], x.f), value(pair[1], x.f)
			if !x.timed || b == 0 {
				line += " |"
				continue
			}
			line += fmt.Sprintf(" %.2f |", k/b)
		}
		target, met := "", ""
		k, b := value(variantForKind, x.f), value(variantBaselineUnstructured, x.f)
		switch {
		case x.timed:
			target, met = "≤ 1.1 × baseline", "yes"
			if b == 0 || k/b > 1.1 {
				met = "**no**"
			}
		case x.zero:
			target, met = "0", "yes"
			if k != 0 {
				met = "**no**"
			}
		}
		_, _ = fmt.Fprintf(w, "%s %s | %s |\n", line, target, met)
	}
	_, _ = fmt.Fprintln(w)
	for _, c := range columns {
		for i, f := range r[c.variant] {
			var parts []string
			for _, k := range slices.Sorted(maps.Keys(f.requests)) {
				parts = append(parts, fmt.Sprintf("%s: %d", k, f.requests[k]))
			}
			_, _ = fmt.Fprintf(w, "%s run %d: idle after %.2f s, CPU %.3f s; %s\n", c.variant, i+1, f.idle.Seconds(), f.cpu, strings.Join(parts, ", "))
		}
	}
}

// TestRestartWorkload runs the restart workload small, so that it cannot
// rot, and checks what is not a matter of time: a fresh process of the
// quick start over handled objects writes none of them, reads none of
// them one by one, and calls no handler; and the hand-written
// counterpart's fresh process writes nothing either (its objects were
// all handled).
func TestRestartWorkload(t *testing.T) {
	const n = 10
	r := restartWorkload(t, n, 1)
	var table strings.Builder
	writeRestartTable(&table, r, n)
	t.Log("\n" + table.String())
	kopf := r[variantForKind][0]
	if writes := objectWrites(kopf.requests); writes != 0 {
		t.Errorf("the fresh quick start wrote its handled objects %d times, want 0: %v", writes, kopf.requests)
	}
	if gets := countVerb(kopf.requests, "get"); gets != 0 {
		t.Errorf("the fresh quick start read objects one by one %d times, want 0: %v", gets, kopf.requests)
	}
	// Its cache lists the objects through a watch (client-go's streamed
	// list) or by a list.
	if kopf.requests["list kopfexamples"]+kopf.requests["watch kopfexamples"] == 0 {
		t.Errorf("the fresh quick start did not read the objects: %v", kopf.requests)
	}
	if len(kopf.calls) != 0 {
		t.Errorf("the fresh quick start called handlers of handled objects: %v", kopf.calls)
	}
	base := r[variantBaselineUnstructured][0]
	if writes := objectWrites(base.requests); writes != 0 {
		t.Errorf("the fresh baseline wrote its handled objects %d times, want 0: %v", writes, base.requests)
	}
	for v, fs := range r {
		if fs[0].idle <= 0 || fs[0].cpu <= 0 {
			t.Errorf("the %s variant's restart was not measured: %+v", v, fs[0])
		}
	}
}
