package harness

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/kopf-go/kopf/test/faults/faultlog"
)

// Spec is what a replica runs.
type Spec struct {
	// PodID is the replica's POD_ID, kept across restarts.
	PodID string
	// Binary, Args and Env are the program, its arguments and its
	// environment beyond this process's own and POD_ID.
	Binary string
	Args   []string
	Env    []string
	// Dir holds the replica's output file, <PodID>.out.
	Dir string
	// RestartDelay is how long after an exit it did not ask for the
	// replica starts again (default 1 s); it doubles with every exit
	// within a minute of the start, up to 8 times itself, as a kubelet's
	// back-off does.
	RestartDelay time.Duration
}

// stableRun is how long a process must have run for its exit to reset
// the restart back-off.
const stableRun = time.Minute

// Replica is one replica, run and restarted. Its goroutines (one per
// process, which waits for the exit and restarts it if due) end by Close.
type Replica struct {
	spec Spec
	log  *faultlog.Log

	mu   sync.Mutex
	proc *process
	// started is when proc started; actor is its POD_ID/pid.
	started time.Time
	actor   string
	// down: the current process's end was asked for, and the replica
	// stays down until Restart.
	down   bool
	closed bool
	delay  time.Duration
	// closing is closed by Close, to cut restart delays short.
	closing chan struct{}
	wg      sync.WaitGroup
}

// Start runs the replica's first process.
func Start(spec Spec, log *faultlog.Log) (*Replica, error) {
	if spec.RestartDelay == 0 {
		spec.RestartDelay = time.Second
	}
	r := &Replica{spec: spec, log: log, closing: make(chan struct{}), delay: spec.RestartDelay}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.launch(); err != nil {
		return nil, err
	}
	return r, nil
}

// PodID is the replica's POD_ID.
func (r *Replica) PodID() string { return r.spec.PodID }

// Output is the path of the file its processes write to.
func (r *Replica) Output() string { return filepath.Join(r.spec.Dir, r.spec.PodID+".out") }

// Actor is the current process's actor (POD_ID/pid), "" while it is down.
func (r *Replica) Actor() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.actor
}

// Up reports whether a process runs (or is paused).
func (r *Replica) Up() bool { return r.Actor() != "" }

// launch starts a process; r.mu is held.
func (r *Replica) launch() error {
	p, err := startProcess(r.spec.Binary, r.spec.Args, append([]string{"POD_ID=" + r.spec.PodID}, r.spec.Env...), r.Output())
	if err != nil {
		return err
	}
	r.proc, r.started, r.down = p, time.Now(), false
	r.actor = fmt.Sprintf("%s/%d", r.spec.PodID, p.pid())
	r.log.Event(faultlog.Entry{Kind: faultlog.ProcessStart, Replica: r.spec.PodID, Actor: r.actor})
	r.wg.Add(1)
	go r.watch(p, r.actor)
	return nil
}

// watch waits for the process to exit, logs it, and restarts the
// replica after the back-off unless its end was asked for.
func (r *Replica) watch(p *process, actor string) {
	defer r.wg.Done()
	<-p.done
	r.mu.Lock()
	r.log.Event(faultlog.Entry{Kind: faultlog.ProcessExit, Replica: r.spec.PodID, Actor: actor, Note: p.status()})
	if r.proc != p {
		close(p.noted)
		r.mu.Unlock()
		return
	}
	r.actor = ""
	close(p.noted)
	if r.down || r.closed {
		r.mu.Unlock()
		return
	}
	delay := r.delay
	if time.Since(r.started) >= stableRun {
		delay = r.spec.RestartDelay
	}
	r.delay = min(delay*2, r.spec.RestartDelay*8)
	r.mu.Unlock()

	timer := time.NewTimer(delay)
	defer timer.Stop()
	select {
	case <-r.closing:
		return
	case <-timer.C:
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || r.down || r.proc != p {
		return // asked to stay down, or restarted by hand, meanwhile
	}
	if err := r.launch(); err != nil {
		r.log.Event(faultlog.Entry{Kind: faultlog.ProcessExit, Replica: r.spec.PodID, Note: "restart failed: " + err.Error()})
	}
}

// Signal sends sig to the current process and returns its actor. With
// stay, the replica is not restarted when the process exits.
func (r *Replica) Signal(sig syscall.Signal, stay bool) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.actor == "" {
		return "", fmt.Errorf("signal %s: %s is down", sig, r.spec.PodID)
	}
	if stay {
		r.down = true
	}
	return r.actor, r.proc.signal(sig)
}

// Term sends SIGTERM and keeps the replica down after the exit; it
// returns the actor and a channel closed when that process has exited.
func (r *Replica) Term() (string, <-chan struct{}, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.actor == "" {
		return "", nil, fmt.Errorf("send SIGTERM: %s is down", r.spec.PodID)
	}
	r.down = true
	return r.actor, r.proc.done, r.proc.signal(syscall.SIGTERM)
}

// Kill sends SIGKILL and waits for the exit; the replica stays down until
// Restart. It returns the killed actor.
func (r *Replica) Kill() (string, error) {
	actor, err := r.Signal(syscall.SIGKILL, true)
	if err != nil {
		return "", err
	}
	r.wait()
	return actor, nil
}

// Stop sends SIGTERM and waits until the process exits or ctx ends; the
// replica stays down either way.
func (r *Replica) Stop(ctx context.Context) (string, error) {
	actor, err := r.Signal(syscall.SIGTERM, true)
	if err != nil {
		return "", err
	}
	select {
	case <-r.exited():
		return actor, nil
	case <-ctx.Done():
		return actor, fmt.Errorf("stop %s: it did not exit after SIGTERM: %w", actor, ctx.Err())
	}
}

// exited is closed when the current process (at the call) has exited and
// the replica has taken note of it: a Restart then finds none running.
func (r *Replica) exited() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.proc == nil {
		return closedChan
	}
	return r.proc.noted
}

// Exited is closed once the process that runs now has exited.
func (r *Replica) Exited() <-chan struct{} { return r.exited() }

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// wait waits for the current process's exit.
func (r *Replica) wait() { <-r.exited() }

// reapBound bounds how long Restart waits for a process whose end was
// asked for to be gone: a SIGKILLed process is gone once it is reaped, as
// a process supervisor waits for before it starts the next one.
const reapBound = 10 * time.Second

// Restart starts a new process with the same POD_ID if none runs. A
// process whose end was asked for (Kill, Stop, Term) that has not been
// reaped yet is waited for, up to reapBound.
func (r *Replica) Restart() (string, error) {
	deadline := time.Now().Add(reapBound)
	r.mu.Lock()
	defer r.mu.Unlock()
	for r.actor != "" && r.down && !r.closed {
		noted := r.proc.noted
		left := time.Until(deadline)
		if left <= 0 {
			return "", fmt.Errorf("restart %s: %s still runs %s after its end was asked for", r.spec.PodID, r.actor, reapBound)
		}
		r.mu.Unlock()
		select {
		case <-noted:
		case <-time.After(left):
		}
		r.mu.Lock()
	}
	if r.closed {
		return "", fmt.Errorf("restart %s: closed", r.spec.PodID)
	}
	if r.actor != "" {
		return "", fmt.Errorf("restart %s: it runs already, as %s (started meanwhile by something else)", r.spec.PodID, r.actor)
	}
	r.delay = r.spec.RestartDelay
	if err := r.launch(); err != nil {
		return "", err
	}
	return r.actor, nil
}

// Close kills the process if it runs (a paused one too) and waits for the
// replica's goroutines.
func (r *Replica) Close() {
	r.mu.Lock()
	if !r.closed {
		r.closed = true
		close(r.closing)
	}
	if r.actor != "" {
		_ = r.proc.signal(syscall.SIGKILL)
	}
	r.mu.Unlock()
	r.wg.Wait()
}
