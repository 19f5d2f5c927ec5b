// Package freeze holds whether the operator is frozen (paused in favour of
// another operator), and why: several blockers (a peer of higher priority
// in one namespace, a missing peering object, ...) may hold it at once,
// and it runs again only when none does.
package freeze

import (
	"context"
	"sort"
	"strings"
	"sync"
)

// Toggle is the operator's frozen state. The zero value is not frozen.
type Toggle struct {
	mu       sync.Mutex
	blockers map[string]string
	// changed is closed and replaced at every change of the frozen state.
	changed chan struct{}
}

// Set turns one blocker on (with a reason) or off.
func (t *Toggle) Set(blocker string, on bool, reason string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	wasFrozen := len(t.blockers) > 0
	if on {
		if t.blockers == nil {
			t.blockers = map[string]string{}
		}
		t.blockers[blocker] = reason
	} else {
		delete(t.blockers, blocker)
	}
	if wasFrozen != (len(t.blockers) > 0) && t.changed != nil {
		close(t.changed)
		t.changed = nil
	}
}

// Frozen reports whether the operator is frozen, and why.
func (t *Toggle) Frozen() (bool, string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.blockers) > 0, t.reasonLocked()
}

func (t *Toggle) reasonLocked() string {
	reasons := make([]string, 0, len(t.blockers))
	for _, r := range t.blockers {
		reasons = append(reasons, r)
	}
	sort.Strings(reasons)
	return strings.Join(reasons, "; ")
}

// WaitFor blocks until the frozen state is the wanted one, or ctx is done.
func (t *Toggle) WaitFor(ctx context.Context, frozen bool) error {
	for {
		t.mu.Lock()
		if (len(t.blockers) > 0) == frozen {
			t.mu.Unlock()
			return nil
		}
		if t.changed == nil {
			t.changed = make(chan struct{})
		}
		changed := t.changed
		t.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
