package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kopf-go/kopf/test/bench/internal/stats"
	"github.com/kopf-go/kopf/test/testenv"
)

// operatorProcess is one run of the benchmark's operator.
type operatorProcess struct {
	variant string
	proc    *testenv.Process
	stats   string // the URL of its /stats
	log     string // the path of its log
	// pid is set for an external operator, which serves no stats: they
	// are read from /proc.
	pid int
	// started is when its process was started.
	started time.Time
}

// profiles, if set, is a directory where every operator run leaves its
// CPU profile, <namespace>-<variant>.cpu, and the memory workloads a heap
// profile, <namespace>-<variant>.heap, of the moment memory is measured;
// a shard ring's replicas add their identity: <namespace>-<variant>-<identity>.
var profiles = flag.String("profiles", "", "write each operator run's CPU and heap profiles into this directory")

// verbose shows each operator's output (its stderr and stdout, not its
// log) when it stops.
var verbose = flag.Bool("operator-output", false, "show each operator's output when it stops")

// operatorFlags are added to every operator's command line.
var operatorFlags = flag.String("operator-flags", "", "more flags for every operator, space-separated (e.g. -v=4)")

var statsLine = regexp.MustCompile(`stats at (http://\S+)`)

// startOperator runs the operator's variant for a namespace and waits
// until it serves its stats.
// heapProfiled, among startOperator's extra arguments, asks for a heap
// profile too when -profiles is set. Only the memory workloads ask: the
// fine sampling it needs slows the operator down.
const heapProfiled = "--heap-profiled"

func startOperator(tb testing.TB, variant, namespace string, extra ...string) *operatorProcess {
	tb.Helper()
	// Replicas of one variant in one namespace differ by identity.
	base := namespace + "-" + variant
	if i := slices.Index(extra, "--identity"); i >= 0 && i+1 < len(extra) {
		base += "-" + extra[i+1]
	}
	log := filepath.Join(fixtures.tmp, base+".log")
	args := []string{"--variant", variant, "--namespace", namespace, "--log", log}
	for _, arg := range extra {
		if arg != heapProfiled {
			args = append(args, arg)
		}
	}
	args = append(args, strings.Fields(*operatorFlags)...)
	if *profiles != "" {
		profile := filepath.Join(*profiles, base)
		args = append(args, "--cpuprofile", profile+".cpu")
		if slices.Contains(extra, heapProfiled) {
			args = append(args, "--heapprofile", profile+".heap")
		}
	}
	binary := fixtures.operator
	if variant == variantForKindOther {
		// Another build's quick start (restart_test.go).
		binary, args[1] = *restartOther, variantForKind
	}
	if variant == variantForKindTraced {
		args[1] = variantForKind // with the OTLP environment (tracing_test.go)
	}
	started := time.Now()
	proc, err := testenv.StartProcess(binary, args, append([]string{"KUBECONFIG=" + fixtures.kubeconfig}, tracedEnvironment(variant)...))
	if err != nil {
		tb.Fatal(err)
	}
	op := &operatorProcess{variant: variant, proc: proc, log: log, started: started}
	tb.Cleanup(func() {
		proc.Kill()
		if *keepLogs != "" {
			// The quick start logs to its output, not to its log file.
			_ = os.MkdirAll(*keepLogs, 0o755)
			_ = os.WriteFile(filepath.Join(*keepLogs, base+".out"), []byte(proc.Output()), 0o644)
		}
	})
	deadline := time.Now().Add(time.Minute)
	for op.stats == "" {
		if m := statsLine.FindStringSubmatch(proc.Output()); m != nil {
			op.stats = m[1]
			break
		}
		if proc.Exited() || time.Now().After(deadline) {
			tb.Fatalf("the %s operator did not start: %v\n%s", variant, proc.Err(), proc.Output())
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Measure from the moment its controller's workers run (which is
	// after its cache is synced): its start-up is not part of any
	// workload.
	for {
		// The quick start's runner logs to stderr, as text.
		if log, _ := os.ReadFile(op.log); bytes.Contains(log, []byte(`"msg":"Starting workers"`)) ||
			strings.Contains(proc.Output(), "Starting workers") {
			break
		}
		if proc.Exited() || time.Now().After(deadline) {
			tb.Fatalf("the %s operator did not start its workers: %v\n%s", variant, proc.Err(), op.tail())
		}
		time.Sleep(10 * time.Millisecond)
	}
	return op
}

// read fetches the stats; query is added to the URL (e.g. "gc=1").
func (op *operatorProcess) read(tb testing.TB, query string) stats.Stats {
	tb.Helper()
	if op.pid != 0 {
		s, err := procStats(op.pid)
		if err != nil {
			tb.Fatalf("read the %s operator's stats: %v", *externalName, err)
		}
		return s
	}
	url := op.stats
	if query != "" {
		url += "?" + query
	}
	resp, err := http.Get(url)
	if err != nil {
		tb.Fatalf("read the %s operator's stats: %v", op.variant, err)
	}
	defer func() { _ = resp.Body.Close() }()
	var s stats.Stats
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		tb.Fatalf("decode the %s operator's stats: %v", op.variant, err)
	}
	return s
}

// settle waits until the operator is idle: less than 2% of a core busy
// over a second. Work queued behind what the driver observes (reconciles
// of its own writes' events) belongs to the workload; so measurements are
// taken after it.
func (op *operatorProcess) settle(tb testing.TB) {
	tb.Helper()
	const window = time.Second
	deadline := time.Now().Add(time.Minute)
	last := op.read(tb, "").CPU
	for time.Now().Before(deadline) {
		time.Sleep(window)
		now := op.read(tb, "").CPU
		if now-last < 0.02*window.Seconds() {
			return
		}
		last = now
	}
	tb.Logf("the %s operator was still busy after a minute; measuring anyway", op.variant)
}

// stop sends SIGTERM and returns how long the operator took to exit.
func (op *operatorProcess) stop(tb testing.TB) time.Duration {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	begin := time.Now()
	if err := op.proc.Stop(ctx); err != nil {
		tb.Errorf("stop the %s operator: %v\n%s", op.variant, err, op.tail())
	}
	took := time.Since(begin)
	if *verbose {
		tb.Logf("the %s operator's output:\n%s", op.variant, op.proc.Output())
	}
	return took
}

// tail is the end of the operator's output and log, for failures.
func (op *operatorProcess) tail() string {
	log, _ := os.ReadFile(op.log)
	if len(log) > 4000 {
		log = log[len(log)-4000:]
	}
	return op.proc.Output() + "\n--- log ---\n" + string(log)
}
