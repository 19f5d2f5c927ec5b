package e2e

import (
	"context"
	"errors"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kopf-go/kopf/test/testenv"
)

// waitTimeout bounds each wait for an outcome; Kopf's e2e runner allows an
// example 60 s in all.
const waitTimeout = 60 * time.Second

// operator is an example running as a process. The test's cleanup kills
// the process if it still runs, which waits for the process's goroutine.
type operator struct {
	*testenv.Process
}

// startExample runs the example's binary against the package's control
// plane, serving only the given namespace, with more flags if given.
func startExample(t *testing.T, name, namespace string, flags ...string) *operator {
	t.Helper()
	p, err := testenv.StartProcess(filepath.Join(binDir, name),
		append([]string{"--standalone", "--verbose", "--namespace=" + namespace}, flags...),
		[]string{"KUBECONFIG=" + kubeconfig})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Kill()
		t.Logf("the output of %s:\n%s", name, p.Output())
	})
	return &operator{p}
}

// waitFor polls cond until it holds, failing the test after waitTimeout or
// as soon as the operator has exited.
func (op *operator) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	op.WaitFor(t, what, waitTimeout, cond)
}

// waitForLine waits until the output contains the substring.
func (op *operator) waitForLine(t *testing.T, substring string) {
	t.Helper()
	op.waitFor(t, "the output contains "+strconv.Quote(substring), func() bool {
		return strings.Contains(op.Output(), substring)
	})
}

// stop sends SIGTERM and asserts that the operator exits with code 0.
func (op *operator) stop(t *testing.T) {
	t.Helper()
	if op.Exited() {
		t.Fatalf("the operator exited before SIGTERM: %v", op.Err())
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	switch err := op.Stop(ctx); {
	case errors.Is(err, context.DeadlineExceeded):
		t.Fatalf("the operator did not exit within %s of SIGTERM", waitTimeout)
	case err != nil:
		t.Errorf("after SIGTERM, want exit code 0: %v", err)
	}
}

// counts returns how often each first submatch of re occurs in the output.
func (op *operator) counts(re *regexp.Regexp) map[string]int {
	out := map[string]int{}
	for _, m := range re.FindAllStringSubmatch(op.Output(), -1) {
		out[m[1]]++
	}
	return out
}

// count returns how often the substring occurs in the output.
func (op *operator) count(substring string) int { return strings.Count(op.Output(), substring) }
