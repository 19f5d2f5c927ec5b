package testenv

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/kopf-go/kopf/pkg/kopftest"
)

// sh runs a shell script as a Process and kills it when the test ends.
func sh(t *testing.T, script string, env ...string) *Process {
	t.Helper()
	p, err := StartProcess("/bin/sh", []string{"-c", script}, env)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	return p
}

// waitForOutput polls until the output contains the substring, since the
// script's traps are set only once it has printed.
func waitForOutput(t *testing.T, p *Process, substring string) {
	t.Helper()
	kopftest.Eventually(t, "the output to contain "+substring, 10*time.Second, func() bool { return strings.Contains(p.Output(), substring) })
}

func TestProcessStop(t *testing.T) {
	defer goleak.VerifyNone(t)
	tests := []struct {
		name    string
		script  string
		timeout time.Duration
		wantErr string
		wantIs  error
	}{
		{"exit 0 on SIGTERM", `trap 'echo bye; exit 0' TERM; echo ready; while :; do sleep 0.05; done`, 10 * time.Second, "", nil},
		{"exit 3 on SIGTERM", `trap 'exit 3' TERM; echo ready; while :; do sleep 0.05; done`, 10 * time.Second, "sh exited with exit status 3, not 0", nil},
		{"SIGTERM ignored", `trap '' TERM; echo ready; while :; do sleep 0.05; done`, 200 * time.Millisecond, "it did not exit after SIGTERM, so it was killed", context.DeadlineExceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := sh(t, tt.script)
			waitForOutput(t, p, "ready")
			ctx, cancel := context.WithTimeout(context.Background(), tt.timeout)
			defer cancel()
			err := p.Stop(ctx)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("Stop() = %v, want nil", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("Stop() = %v, want an error containing %q", err, tt.wantErr)
			case tt.wantIs != nil && !errors.Is(err, tt.wantIs):
				t.Errorf("Stop() = %v, want one wrapping %v", err, tt.wantIs)
			}
			if !p.Exited() {
				t.Error("the process still runs after Stop")
			}
			p.Kill() // safe after Stop
		})
	}
}

func TestProcessOutputEnvAndExit(t *testing.T) {
	defer goleak.VerifyNone(t)
	p := sh(t, `echo "out $GREETING"; echo err >&2; exit 2`, "GREETING=hello")
	kopftest.Eventually(t, "the script exits", 10*time.Second, p.Exited)
	if got, want := p.Output(), "out hello\nerr\n"; got != want {
		t.Errorf("Output() = %q, want %q", got, want)
	}
	if err := p.Err(); err == nil || !strings.Contains(err.Error(), "sh exited with exit status 2, not 0") {
		t.Errorf("Err() = %v, want exit status 2", err)
	}
	if err := p.Stop(context.Background()); err == nil || !strings.Contains(err.Error(), "already exited") {
		t.Errorf("Stop() after exit = %v, want an error saying it had already exited", err)
	}
}
