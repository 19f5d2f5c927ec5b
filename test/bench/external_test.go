package bench

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/test/bench/internal/kex"
	"github.com/kopf-go/kopf/test/bench/internal/stats"
	"github.com/kopf-go/kopf/test/testenv"
)

// An external operator (any program, e.g. a Python Kopf operator with the
// same three handlers) can run the lifecycle and memory workloads beside
// the others, in the same rounds, on the same control plane. It is seen
// from outside only: the wall-clock of the phases through the observer,
// and its process's CPU time and resident memory from /proc. It must do
// what the others do: put the create handler's result into
// status.create_fn, keep the last handled configuration in Kopf's
// annotation, and hold a finalizer until its delete handler has run.
var (
	externalName    = flag.String("external-name", "external", "the column heading of the external operator")
	externalCommand = flag.String("external-command", "",
		"run this shell command as an extra operator variant (with $KUBECONFIG and $BENCH_NAMESPACE set); see docs/benchmarks.md")
)

// variantExternal is the external operator's variant, when there is one.
const variantExternal = "external"

// withExternal adds the external variant to a list of variants, if one is
// given.
func withExternal(variants []string) []string {
	if *externalCommand == "" {
		return variants
	}
	return append(variants, variantExternal)
}

// startExternal runs the external operator for a namespace and waits until
// it handles objects: until it has handled the creation and the deletion
// of a sentinel object, which is gone before the workload begins.
func startExternal(tb testing.TB, namespace string) *operatorProcess {
	tb.Helper()
	log := filepath.Join(fixtures.tmp, fmt.Sprintf("%s-%s.log", namespace, variantExternal))
	proc, err := testenv.StartProcess("bash", []string{"-c", *externalCommand},
		[]string{"KUBECONFIG=" + fixtures.kubeconfig, "BENCH_NAMESPACE=" + namespace})
	if err != nil {
		tb.Fatal(err)
	}
	op := &operatorProcess{variant: variantExternal, proc: proc, log: log, pid: proc.Pid()}
	tb.Cleanup(func() { proc.Kill() })

	driver := newClient(tb, nil)
	sentinel := kex.New(namespace, 99_999)
	sentinel.Name = "kex-sentinel"
	if err := driver.Create(context.Background(), sentinel); err != nil {
		tb.Fatal(err)
	}
	op.poll(tb, "handles the sentinel's creation", func() bool {
		obj := &kex.KopfExample{}
		err := driver.Get(context.Background(), client.ObjectKeyFromObject(sentinel), obj)
		_, handled := kex.HandledCounter(obj, kex.KopfLastHandled)
		return err == nil && handled
	})
	if err := driver.Delete(context.Background(), sentinel); err != nil {
		tb.Fatal(err)
	}
	op.poll(tb, "handles the sentinel's deletion", func() bool {
		err := driver.Get(context.Background(), client.ObjectKeyFromObject(sentinel), &kex.KopfExample{})
		return apierrors.IsNotFound(err)
	})
	return op
}

// poll waits until cond holds, failing if the operator exits or a minute
// passes.
func (op *operatorProcess) poll(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if op.proc.Exited() || time.Now().After(deadline) {
			tb.Fatalf("the %s operator did not start (it never %s): %v\n%s", *externalName, what, op.proc.Err(), op.tail())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// procStats reads what /proc tells of a process: its CPU time (its own
// and its waited-for children's) and resident memory. Everything else an
// external operator does not report.
func procStats(pid int) (stats.Stats, error) {
	var s stats.Stats
	_, fields, err := procStat(pid)
	if err != nil {
		return s, err
	}
	// utime, stime, cutime, cstime are fields 14-17 (fields[11:15]).
	if s.CPU, err = cpuSeconds(fields[11:15]); err != nil {
		return s, fmt.Errorf("parse /proc/%d/stat: %w", pid, err)
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		if value, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
			if err != nil {
				return s, fmt.Errorf("parse VmRSS of %d: %w", pid, err)
			}
			s.RSS = kb * 1024
		}
	}
	return s, nil
}

// procStat reads /proc/<pid>/stat: the command, and the fields after it,
// numbered from 3 (state), so that fields[0] is field 3. The command, in
// parentheses, may hold spaces and parentheses: the fields begin after
// the last closing one.
func procStat(pid int) (comm string, fields []string, err error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", nil, err
	}
	open, end := strings.IndexByte(string(stat), '('), strings.LastIndexByte(string(stat), ')')
	if open < 0 || end < open {
		return "", nil, fmt.Errorf("parse /proc/%d/stat: %q", pid, stat)
	}
	fields = strings.Fields(string(stat)[end+1:])
	if len(fields) < 15 {
		return "", nil, fmt.Errorf("parse /proc/%d/stat: %q", pid, stat)
	}
	return string(stat)[open+1 : end], fields, nil
}

// cpuSeconds sums fields of /proc/<pid>/stat counted in clock ticks
// (USER_HZ, 100 a second on Linux) into seconds.
func cpuSeconds(ticks []string) (float64, error) {
	const userHZ = 100
	var sum float64
	for _, f := range ticks {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil {
			return 0, err
		}
		sum += v
	}
	return sum / userHZ, nil
}
