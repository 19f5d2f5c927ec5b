package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Process is a program running as a child process, such as an example
// operator, with its stdout and stderr captured together. It owns one
// goroutine, which waits for the process; Stop and Kill wait for that
// goroutine, so whoever starts a Process ends it with one of them.
type Process struct {
	name string
	cmd  *exec.Cmd
	out  *lockedBuffer
	// done is closed when the process has exited and its output is copied.
	done chan struct{}
	// waitErr is cmd.Wait's result, readable once done is closed.
	waitErr error
}

// StartProcess runs the program at path with the given arguments, in this
// process's environment plus env (entries of the form "KEY=value").
func StartProcess(path string, args, env []string) (*Process, error) {
	p := &Process{name: filepath.Base(path), out: &lockedBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(path, args...)
	p.cmd.Env = append(os.Environ(), env...)
	// One writer for both streams: exec copies them through one pipe, so
	// what the program prints and what it logs keep their order.
	p.cmd.Stdout = p.out
	p.cmd.Stderr = p.out
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", p.name, err)
	}
	go func() {
		defer close(p.done)
		p.waitErr = p.cmd.Wait()
	}()
	return p, nil
}

// Pid is the process's id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Output returns what the process has written to stdout and stderr so far.
func (p *Process) Output() string { return p.out.String() }

// Exited reports whether the process has exited.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Err explains how the process exited: nil for exit code 0, and also nil
// while it still runs (see Exited).
func (p *Process) Err() error {
	if !p.Exited() || p.waitErr == nil {
		return nil
	}
	var exit *exec.ExitError
	if errors.As(p.waitErr, &exit) {
		return fmt.Errorf("%s exited with %s, not 0", p.name, exit.ProcessState)
	}
	return fmt.Errorf("wait for %s: %w", p.name, p.waitErr)
}

// Stop sends SIGTERM and waits for the process to exit; it returns an
// error unless the exit code is 0. If ctx ends first, Stop kills the
// process and returns an error wrapping ctx's. Once Stop returns, the
// process has exited.
func (p *Process) Stop(ctx context.Context) error {
	if p.Exited() {
		if err := p.Err(); err != nil {
			return fmt.Errorf("stop %s: it had already exited: %w", p.name, err)
		}
		return fmt.Errorf("stop %s: it had already exited with code 0", p.name)
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		p.Kill()
		return fmt.Errorf("send SIGTERM to %s: %w", p.name, err)
	}
	select {
	case <-p.done:
		return p.Err()
	case <-ctx.Done():
		p.Kill()
		return fmt.Errorf("stop %s: it did not exit after SIGTERM, so it was killed: %w", p.name, ctx.Err())
	}
}

// Kill ends the process if it still runs and waits until it has exited.
// It is safe to call at any time, also after Stop.
func (p *Process) Kill() {
	if !p.Exited() {
		_ = p.cmd.Process.Kill()
	}
	<-p.done
}

// lockedBuffer is a bytes.Buffer that exec's copying goroutine writes
// while the process's owner reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p to the buffer.
func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what has been written so far.
func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Build builds the module's packages (paths as "./test/x/operator") into
// out: a file for one package, a directory (ending in a separator) for
// several, from the module's root.
func Build(out string, pkgs ...string) error {
	cmd := exec.Command("go", append([]string{"build", "-o", out}, pkgs...)...)
	cmd.Dir = Root()
	if output, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build %v: %w\n%s", pkgs, err, output)
	}
	return nil
}

// WaitFor polls cond every 50 ms until it holds. It fails the test after
// timeout, or as soon as the process has exited without cond holding,
// since nothing would change then.
func (p *Process) WaitFor(t testing.TB, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		switch {
		case p.Exited() && !cond():
			t.Fatalf("%s exited (%v) while waiting until %s", p.name, p.Err(), what)
		case time.Now().After(deadline):
			t.Fatalf("timed out after %s waiting until %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
