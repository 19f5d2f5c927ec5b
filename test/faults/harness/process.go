// Package harness runs the replicas of the fault suite as processes, as a
// kubelet runs a pod's container: it restarts one that exits on its own
// after a short delay, with the same POD_ID, and lets the suite send it
// the signals of its faults (SIGKILL, SIGSTOP and SIGCONT, SIGTERM).
// Every start and exit goes to the fault log, beside the faults.
package harness

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

// process is one run of a replica's program, its output appended to a
// file. It owns one goroutine, which waits for it; done is closed when
// that goroutine has seen the exit.
type process struct {
	cmd  *exec.Cmd
	done chan struct{}
	// noted is closed once the replica's watch has taken note of the
	// exit (logged it, and no longer counts the process as running).
	noted chan struct{}
	// state is the exit, readable once done is closed.
	state   *os.ProcessState
	waitErr error
}

// startProcess runs path with args and env (added to this process's
// environment), appending its stdout and stderr to output.
func startProcess(path string, args, env []string, output string) (*process, error) {
	out, err := os.OpenFile(output, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open the output file: %w", err)
	}
	// The child writes to the file itself: nothing is lost or reordered
	// between its streams, and no goroutine of ours copies them.
	defer func() { _ = out.Close() }()
	cmd := exec.Command(path, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", path, err)
	}
	p := &process{cmd: cmd, done: make(chan struct{}), noted: make(chan struct{})}
	go func() {
		defer close(p.done)
		p.waitErr = cmd.Wait()
		p.state = cmd.ProcessState
	}()
	return p, nil
}

func (p *process) pid() int { return p.cmd.Process.Pid }

// signal sends sig unless the process has exited.
func (p *process) signal(sig syscall.Signal) error {
	select {
	case <-p.done:
		return errors.New("the process has exited")
	default:
	}
	if err := p.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("send %s to %d: %w", sig, p.pid(), err)
	}
	return nil
}

// status says how the process ended: "exit status 1", "signal: killed".
func (p *process) status() string {
	if p.state != nil {
		return p.state.String()
	}
	if p.waitErr != nil {
		return p.waitErr.Error()
	}
	return "running"
}

// exitCode is the process's exit code, -1 if a signal ended it.
func (p *process) exitCode() int {
	if p.state == nil {
		return -1
	}
	return p.state.ExitCode()
}
