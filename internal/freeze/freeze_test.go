package freeze

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestBlockers(t *testing.T) {
	var tg Toggle
	if frozen, _ := tg.Frozen(); frozen {
		t.Fatal("a new toggle is frozen")
	}
	tg.Set("ns-a", true, "in favour of x")
	tg.Set("ns-b", true, "in favour of y")
	if frozen, reason := tg.Frozen(); !frozen || reason != "in favour of x; in favour of y" {
		t.Errorf("Frozen() = %v, %q", frozen, reason)
	}
	tg.Set("ns-a", false, "")
	if frozen, reason := tg.Frozen(); !frozen || reason != "in favour of y" {
		t.Errorf("one blocker left: Frozen() = %v, %q", frozen, reason)
	}
	tg.Set("ns-b", false, "")
	if frozen, reason := tg.Frozen(); frozen || reason != "" {
		t.Errorf("no blocker left: Frozen() = %v, %q", frozen, reason)
	}
}

func TestWaitFor(t *testing.T) {
	var tg Toggle
	if err := tg.WaitFor(context.Background(), false); err != nil {
		t.Fatalf("waiting for the current state: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- tg.WaitFor(context.Background(), true) }()
	select {
	case err := <-done:
		t.Fatalf("WaitFor(frozen) returned %v before the freeze", err)
	case <-time.After(20 * time.Millisecond):
	}
	tg.Set("x", true, "because")
	if err := <-done; err != nil {
		t.Errorf("WaitFor(frozen) = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { done <- tg.WaitFor(ctx, false) }()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("WaitFor after cancel = %v, want context.Canceled", err)
	}
}
