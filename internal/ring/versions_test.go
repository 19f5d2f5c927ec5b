package ring

import (
	"testing"
	"time"
)

// The log names the newest version seen at or before a moment: one seen
// later was perhaps written later too. What is older than it keeps is
// folded as it goes, and a moment older than that gets no answer, nor
// does any once a version that does not compare was seen.
func TestVersionLogNamesTheNewestVersionSeenBeforeAMoment(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	l := versionLog{keep: 10 * time.Second}
	if got := l.before(t0); got != "" {
		t.Errorf("before anything was seen: %q", got)
	}
	l.saw("100", t0)
	l.saw("90", t0.Add(time.Second)) // a listed Lease, written earlier
	l.saw("120", t0.Add(3*time.Second))
	l.saw("130", t0.Add(6*time.Second))
	for _, tt := range []struct {
		at   time.Duration
		want string
	}{
		{-time.Second, ""},
		{0, "100"},
		{2 * time.Second, "100"},
		{3 * time.Second, "120"},
		{5 * time.Second, "120"},
	} {
		if got := l.before(t0.Add(tt.at)); got != tt.want {
			t.Errorf("before(t0%+v) = %q, want %q", tt.at, got, tt.want)
		}
	}
	if got := l.before(t0.Add(2 * time.Second)); got != "" {
		t.Errorf("a moment older than one asked for already = %q, want none", got)
	}
	// Seen 30 s later: everything older than 20 s is folded.
	l.saw("200", t0.Add(30*time.Second))
	if len(l.recent) != 1 {
		t.Errorf("the log keeps %d versions, want the one seen within keep", len(l.recent))
	}
	if got := l.before(t0.Add(25 * time.Second)); got != "130" {
		t.Errorf("after folding: %q, want 130", got)
	}
	if got := l.before(t0.Add(30 * time.Second)); got != "200" {
		t.Errorf("at the last sighting: %q, want 200", got)
	}
	l.saw("x7", t0.Add(31*time.Second))
	if got := l.before(t0.Add(31 * time.Second)); got != "" {
		t.Errorf("after a version that does not compare: %q, want none", got)
	}
}
