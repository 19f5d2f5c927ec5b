package e2e

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// waitTimeout bounds each wait for an outcome; Kopf's e2e runner allows an
// example 60 s in all.
const waitTimeout = 60 * time.Second

// operator is an example running as a process, with its stdout and stderr
// captured together. Its one goroutine waits for the process; the test's
// cleanup kills the process if it still runs and waits for that goroutine.
type operator struct {
	cmd     *exec.Cmd
	out     *lockedBuffer
	done    chan struct{}
	waitErr error
}

// startExample runs the example's binary against the package's control
// plane, serving only the given namespace.
func startExample(t *testing.T, name, namespace string) *operator {
	t.Helper()
	op := &operator{out: &lockedBuffer{}, done: make(chan struct{})}
	op.cmd = exec.Command(filepath.Join(binDir, name), "--standalone", "--verbose", "--namespace="+namespace)
	op.cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	// One writer for both streams: exec copies them through one pipe, so
	// the printed lines and the log lines keep their order.
	op.cmd.Stdout = op.out
	op.cmd.Stderr = op.out
	if err := op.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		defer close(op.done)
		op.waitErr = op.cmd.Wait()
	}()
	t.Cleanup(func() {
		if !op.exited() {
			_ = op.cmd.Process.Kill()
		}
		<-op.done
		t.Logf("the output of %s:\n%s", name, op.output())
	})
	return op
}

func (op *operator) output() string { return op.out.String() }

func (op *operator) exited() bool {
	select {
	case <-op.done:
		return true
	default:
		return false
	}
}

// waitFor polls cond until it holds, failing the test after waitTimeout or
// as soon as the operator has exited, since nothing would change then.
func (op *operator) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	var exited bool
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, waitTimeout, true,
		func(context.Context) (bool, error) {
			if cond() {
				return true, nil
			}
			exited = op.exited()
			return exited, nil
		})
	switch {
	case exited:
		t.Fatalf("the operator exited (%v) while waiting until %s", op.waitErr, what)
	case err != nil:
		t.Fatalf("timed out after %s waiting until %s", waitTimeout, what)
	}
}

// waitForLine waits until the output contains the substring.
func (op *operator) waitForLine(t *testing.T, substring string) {
	t.Helper()
	op.waitFor(t, "the output contains "+strconv.Quote(substring), func() bool {
		return strings.Contains(op.output(), substring)
	})
}

// stop sends SIGTERM and asserts that the operator exits with code 0.
func (op *operator) stop(t *testing.T) {
	t.Helper()
	if op.exited() {
		t.Fatalf("the operator exited before SIGTERM: %v", op.waitErr)
	}
	if err := op.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("send SIGTERM: %v", err)
	}
	select {
	case <-op.done:
	case <-time.After(waitTimeout):
		t.Fatalf("the operator did not exit within %s of SIGTERM", waitTimeout)
	}
	var exit *exec.ExitError
	switch {
	case errors.As(op.waitErr, &exit):
		t.Errorf("the operator exited with %s after SIGTERM, want exit code 0", exit.ProcessState)
	case op.waitErr != nil:
		t.Errorf("wait for the operator: %v", op.waitErr)
	}
}

// counts returns how often each first submatch of re occurs in the output.
func (op *operator) counts(re *regexp.Regexp) map[string]int {
	out := map[string]int{}
	for _, m := range re.FindAllStringSubmatch(op.output(), -1) {
		out[m[1]]++
	}
	return out
}

// count returns how often the substring occurs in the output.
func (op *operator) count(substring string) int { return strings.Count(op.output(), substring) }

// lockedBuffer is a bytes.Buffer that exec's copying goroutine writes while
// the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
