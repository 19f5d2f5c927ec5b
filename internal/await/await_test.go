package await

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// recorder is a testing.TB that records a Fatalf instead of ending the
// test, so that the failures of the helpers can be checked.
type recorder struct {
	testing.TB
	mu     sync.Mutex
	failed string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failed = fmt.Sprintf(format, args...)
}

func TestTrueReturnsOnceTheConditionHolds(t *testing.T) {
	r := &recorder{TB: t}
	calls := 0
	True(r, "the third call", 10*time.Second, func() bool { calls++; return calls == 3 })
	if r.failed != "" || calls != 3 {
		t.Errorf("failed %q after %d calls, want no failure after 3", r.failed, calls)
	}
}

func TestTrueFailsNamingWhatItAwaited(t *testing.T) {
	r := &recorder{TB: t}
	True(r, "the impossible", 50*time.Millisecond, func() bool { return false })
	if want := "timed out after 50ms waiting for: the impossible"; r.failed != want {
		t.Errorf("failure = %q, want %q", r.failed, want)
	}
}

func TestNoneMissingFailsWithWhatIsStillMissing(t *testing.T) {
	r := &recorder{TB: t}
	calls := 0
	NoneMissing(r, "three things", 50*time.Millisecond, func() string { calls++; return fmt.Sprintf("thing %d", calls) })
	if want := fmt.Sprintf("waiting for: three things; missing: thing %d", calls); !strings.HasSuffix(r.failed, want) {
		t.Errorf("failure = %q, want it to end in %q (the last call's answer)", r.failed, want)
	}
}

func TestNoneMissingReturnsOnceNothingIsMissing(t *testing.T) {
	r := &recorder{TB: t}
	left := []string{"a", "b"}
	NoneMissing(r, "a and b", 10*time.Second, func() string {
		if len(left) == 0 {
			return ""
		}
		m := left[0]
		left = left[1:]
		return m
	})
	if r.failed != "" || len(left) != 0 {
		t.Errorf("failed %q with %v left, want no failure and nothing left", r.failed, left)
	}
}
