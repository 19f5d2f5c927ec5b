package engine

import (
	"strings"
	"testing"

	"github.com/kopf-go/kopf/internal/freeze"
)

func TestReadiness(t *testing.T) {
	elected := make(chan struct{})
	toggle := &freeze.Toggle{}
	started := false
	isStarted := func() bool { return started }
	lost := make(chan struct{})

	if err := readiness(elected, isStarted, toggle, lost); err != nil {
		t.Errorf("a standby replica (not elected) is not ready: %v", err)
	}
	close(elected)
	if err := readiness(elected, isStarted, toggle, lost); err == nil || !strings.Contains(err.Error(), "startup handlers") {
		t.Errorf("the leader before its startup handlers: err = %v, want the startup handlers named", err)
	}
	started = true
	if err := readiness(elected, isStarted, toggle, lost); err != nil {
		t.Errorf("the running leader is not ready: %v", err)
	}
	toggle.Set("peering", true, "a peer of priority 100")
	if err := readiness(elected, isStarted, toggle, lost); err == nil || !strings.Contains(err.Error(), "frozen") {
		t.Errorf("a frozen leader: err = %v, want frozen", err)
	}
	close(lost)
	if err := readiness(make(chan struct{}), isStarted, toggle, lost); err == nil || !strings.Contains(err.Error(), "lost its ring membership") {
		t.Errorf("a fenced ring member (even one standing by): err = %v, want the membership named", err)
	}
}
