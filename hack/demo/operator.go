package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// stopTimeout bounds how long the operator may take to exit after SIGTERM.
const stopTimeout = 30 * time.Second

// operator is an example operator running as a child process, with its
// stdout and stderr captured together. It owns the one goroutine that
// waits for the process; every way out of the demo goes through stop or
// kill, which wait for that goroutine.
type operator struct {
	cmd    *exec.Cmd
	output *lockedBuffer
	// done is closed when the process has exited and its output is copied.
	done chan struct{}
	// waitErr is cmd.Wait's result, readable once done is closed.
	waitErr error
	// shown is how much of the output has been printed already.
	shown int
}

// startOperator runs the binary with the given arguments.
func startOperator(bin string, args ...string) (*operator, error) {
	op := &operator{output: &lockedBuffer{}, done: make(chan struct{})}
	op.cmd = exec.Command(bin, args...)
	// One writer for both streams: exec copies them through one pipe, in
	// the order the operator wrote them.
	op.cmd.Stdout = op.output
	op.cmd.Stderr = op.output
	if err := op.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the operator: %w", err)
	}
	go func() {
		defer close(op.done)
		op.waitErr = op.cmd.Wait()
	}()
	return op, nil
}

// exited reports whether the process has exited.
func (op *operator) exited() bool {
	select {
	case <-op.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM and waits for the process to exit; it fails unless
// the exit code is 0. A process that does not exit in time is killed.
func (op *operator) stop(ctx context.Context) error {
	if op.exited() {
		return fmt.Errorf("the operator had already exited before SIGTERM: %w", op.exitError())
	}
	if err := op.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return fmt.Errorf("send SIGTERM to the operator: %w", err)
	}
	timer := time.NewTimer(stopTimeout)
	defer timer.Stop()
	select {
	case <-op.done:
		return op.exitError()
	case <-timer.C:
		op.kill()
		return fmt.Errorf("the operator did not exit within %s of SIGTERM; killed it", stopTimeout)
	case <-ctx.Done():
		op.kill()
		return fmt.Errorf("the operator did not exit after SIGTERM before the demo's deadline; killed it: %w", ctx.Err())
	}
}

// kill ends the process if it still runs and waits until it has exited.
// It is safe to call at any time, also after stop.
func (op *operator) kill() {
	if !op.exited() {
		_ = op.cmd.Process.Kill()
	}
	<-op.done
}

// exitError explains a finished process's exit status: nil for exit 0.
func (op *operator) exitError() error {
	<-op.done
	if op.waitErr == nil {
		return nil
	}
	var exit *exec.ExitError
	if errors.As(op.waitErr, &exit) {
		return fmt.Errorf("the operator exited with %s, not 0", exit.ProcessState)
	}
	return fmt.Errorf("wait for the operator: %w", op.waitErr)
}

// printNew prints the output lines that have not been printed yet,
// indented, under a heading.
func (op *operator) printNew(heading string) {
	out := op.output.String()
	fresh := strings.TrimRight(out[op.shown:], "\n")
	op.shown = len(out)
	fmt.Printf("\n%s\n", heading)
	if fresh == "" {
		fmt.Println("    (nothing)")
		return
	}
	for _, line := range strings.Split(fresh, "\n") {
		fmt.Printf("    | %s\n", line)
	}
}

// lockedBuffer is a bytes.Buffer that the copying goroutine of exec writes
// while the demo reads it.
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
