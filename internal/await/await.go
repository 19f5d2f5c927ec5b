// Package await is the one polling loop of the project's tests: a test
// that waits for another goroutine or process to make something true asks
// again, at most every Interval, until it holds or the timeout passes.
// kopftest.Eventually, for operator authors and the tests above kopftest,
// is this loop; the tests of the packages below kopftest (which cannot
// import it) call it here.
//
// Polling is for outcomes that have no event to wait on. A test that shows
// that something did not happen waits for an event proving that the
// system had its chance (a later event handled, a fake clock's timer
// still pending), never for a while.
package await

import (
	"testing"
	"time"
)

// Interval is how often a condition is asked again, at most: the first
// calls come sooner (from 100 µs, twice as long each time), so that a
// test waiting on a goroutine a fake clock drives does not lose 20 ms per
// step.
const Interval = 20 * time.Millisecond

// True polls cond until it holds, and fails the test (naming what was
// awaited) if it does not within the timeout.
func True(t testing.TB, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	if missing := poll(timeout, func() string {
		if cond() {
			return ""
		}
		return "not yet"
	}); missing != "" {
		t.Fatalf("timed out after %s waiting for: %s", timeout, what)
	}
}

// NoneMissing polls missing until it returns "" (nothing is missing), and
// fails the test with what was awaited and what its last call said was
// missing if that does not happen within the timeout.
func NoneMissing(t testing.TB, what string, timeout time.Duration, missing func() string) {
	t.Helper()
	if m := poll(timeout, missing); m != "" {
		t.Fatalf("timed out after %s waiting for: %s; missing: %s", timeout, what, m)
	}
}

// poll calls missing until it returns "" or the timeout passes, and
// returns what its last call said.
func poll(timeout time.Duration, missing func() string) string {
	deadline := time.Now().Add(timeout)
	for pause := 100 * time.Microsecond; ; pause = min(2*pause, Interval) {
		m := missing()
		if m == "" || time.Now().After(deadline) {
			return m
		}
		time.Sleep(pause)
	}
}
