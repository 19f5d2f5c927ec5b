package harness

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/kopf-go/kopf/pkg/kopftest"
	"github.com/kopf-go/kopf/test/faults/faultlog"
)

// script runs a shell script as a replica; the script's $1 is a file
// that it may write to.
func script(t *testing.T, body string) (*Replica, *faultlog.Log, string) {
	t.Helper()
	dir := t.TempDir()
	log, err := faultlog.Open(filepath.Join(dir, "faults.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = log.Close() })
	file := filepath.Join(dir, "file")
	r, err := Start(Spec{PodID: "pod-a", Binary: "/bin/sh", Args: []string{"-c", body, "sh", file}, Dir: dir,
		RestartDelay: 50 * time.Millisecond}, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r, log, file
}

// lifecycle is what the log says of the processes: kind and note.
func lifecycle(log *faultlog.Log) []string {
	var out []string
	for _, e := range log.Entries() {
		out = append(out, e.Kind+" "+e.Note)
	}
	return out
}

func lines(t *testing.T, file string) []string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return strings.Fields(string(data))
}

// A process that exits on its own comes back with the same POD_ID, as
// another actor; the actors in the log are the processes' own.
func TestRestartAfterExit(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	r, log, file := script(t, `echo "$POD_ID/$$" >> "$1"; n=$(wc -l < "$1"); [ "$n" -ge 3 ] && exec sleep 60; exit 1`)
	kopftest.Eventually(t, "the third process runs", 10*time.Second, func() bool { return len(lines(t, file)) == 3 })
	actors := lines(t, file)
	kopftest.Eventually(t, "the replica is up as the third process", 10*time.Second, func() bool { return r.Actor() == actors[2] })
	for _, a := range actors {
		if !strings.HasPrefix(a, "pod-a/") {
			t.Errorf("actor %q is not of pod-a", a)
		}
	}
	if actors[0] == actors[1] {
		t.Errorf("a restart kept the actor %s", actors[0])
	}
	r.Close()
	want := []string{"process-start ", "process-exit exit status 1", "process-start ", "process-exit exit status 1",
		"process-start ", "process-exit signal: killed"}
	if diff := cmp.Diff(want, lifecycle(log)); diff != "" {
		t.Errorf("the log -want +got:\n%s", diff)
	}
	var logged []string
	for _, e := range log.Entries() {
		if e.Kind == faultlog.ProcessStart {
			logged = append(logged, e.Actor)
		}
	}
	if diff := cmp.Diff(actors, logged); diff != "" {
		t.Errorf("the started actors -script +log:\n%s", diff)
	}
}

// A killed replica stays down until restarted by hand; a stopped one
// (SIGTERM) too.
func TestKillStopRestart(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	r, log, file := script(t, `trap 'exit 0' TERM; echo up >> "$1"; while :; do sleep 0.01; done`)
	first := r.Actor()
	kopftest.Eventually(t, "the first process has set its trap", 10*time.Second, func() bool { return len(lines(t, file)) == 1 })
	killed, err := r.Kill()
	if err != nil || killed != first {
		t.Fatalf("Kill() = %q, %v; want %q", killed, err, first)
	}
	time.Sleep(200 * time.Millisecond) // four restart delays
	if r.Up() {
		t.Fatalf("the killed replica came back as %s", r.Actor())
	}
	second, err := r.Restart()
	if err != nil || second == first || second == "" {
		t.Fatalf("Restart() = %q, %v", second, err)
	}
	if _, err := r.Restart(); err == nil {
		t.Error("a second Restart while up succeeded")
	}
	kopftest.Eventually(t, "the second process has set its trap", 10*time.Second, func() bool { return len(lines(t, file)) == 2 })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if stopped, err := r.Stop(ctx); err != nil || stopped != second {
		t.Fatalf("Stop() = %q, %v; want %q", stopped, err, second)
	}
	time.Sleep(200 * time.Millisecond)
	if r.Up() {
		t.Fatalf("the stopped replica came back as %s", r.Actor())
	}
	want := []string{"process-start ", "process-exit signal: killed", "process-start ", "process-exit exit status 0"}
	if diff := cmp.Diff(want, lifecycle(log)); diff != "" {
		t.Errorf("the log -want +got:\n%s", diff)
	}
}

// A paused replica does nothing until resumed, and Close ends it even
// while paused.
func TestPauseResume(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	r, _, file := script(t, `while :; do echo x >> "$1"; sleep 0.01; done`)
	kopftest.Eventually(t, "the script writes", 10*time.Second, func() bool { return len(lines(t, file)) > 0 })
	if _, err := r.Signal(syscall.SIGSTOP, false); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // a write under way ends
	n := len(lines(t, file))
	time.Sleep(200 * time.Millisecond)
	if m := len(lines(t, file)); m != n {
		t.Fatalf("the paused script wrote %d lines", m-n)
	}
	if _, err := r.Signal(syscall.SIGCONT, false); err != nil {
		t.Fatal(err)
	}
	kopftest.Eventually(t, "the resumed script writes", 10*time.Second, func() bool { return len(lines(t, file)) > n })
	if _, err := r.Signal(syscall.SIGSTOP, false); err != nil {
		t.Fatal(err)
	}
	r.Close()
	if r.Up() {
		t.Error("the closed replica is up")
	}
}

// Term returns the exit of the very process it signalled, and the
// replica stays down after it.
func TestTerm(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	r, _, file := script(t, `trap 'sleep 0.2; exit 0' TERM; echo up >> "$1"; while :; do sleep 0.01; done`)
	kopftest.Eventually(t, "the process has set its trap", 10*time.Second, func() bool { return len(lines(t, file)) == 1 })
	first := r.Actor()
	actor, exited, err := r.Term()
	if err != nil || actor != first {
		t.Fatalf("Term() = %q, %v; want %q", actor, err, first)
	}
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Fatal("the process did not exit after SIGTERM")
	}
	time.Sleep(200 * time.Millisecond)
	if r.Up() {
		t.Errorf("the terminated replica came back as %s", r.Actor())
	}
	if _, _, err := r.Term(); err == nil {
		t.Error("Term of a replica that is down succeeded")
	}
}

// A Restart sent right after a kill that nobody waited for waits until
// the killed process is reaped, and then starts the next one: it neither
// fails for the old process nor runs two at once.
func TestRestartWaitsForTheKilledProcessToBeReaped(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	r, log, file := script(t, `echo up >> "$1"; while :; do sleep 0.01; done`)
	first := r.Actor()
	kopftest.Eventually(t, "the first process runs", 10*time.Second, func() bool { return len(lines(t, file)) == 1 })
	if _, err := r.Signal(syscall.SIGKILL, true); err != nil {
		t.Fatal(err)
	}
	second, err := r.Restart()
	if err != nil || second == first || second == "" {
		t.Fatalf("Restart() at once after the kill = %q, %v; want a new process", second, err)
	}
	want := []string{"process-start ", "process-exit signal: killed", "process-start "}
	if diff := cmp.Diff(want, lifecycle(log)); diff != "" {
		t.Errorf("the log -want +got:\n%s", diff)
	}
	if _, err := r.Restart(); err == nil || !strings.Contains(err.Error(), "runs already") {
		t.Errorf("a Restart while up: %v, want an error saying it runs already", err)
	}
}
