package sharding

import (
	"slices"
	"sync"
	"time"
)

// Liveness tells live members from the Leases an observer sees, by the
// observer's own clock, as leader election does: a member is live until
// its Lease has stayed unchanged (same resourceVersion) for the lease
// duration since this observer first saw that version. Clocks of members
// and observers need not agree, only run at about the same rate. A new
// observer knows no history: every Lease it first sees counts as just
// renewed, so that nobody is declared dead before a full lease duration.
type Liveness struct {
	duration time.Duration

	mu   sync.Mutex
	seen map[string]sighting
}

// sighting is a Lease's version and when this observer first saw it.
type sighting struct {
	version string
	at      time.Time
}

// NewLiveness tracks members whose Leases last leaseDuration.
func NewLiveness(leaseDuration time.Duration) *Liveness {
	return &Liveness{duration: leaseDuration, seen: map[string]sighting{}}
}

// Observe records a member's Lease as seen at now; a new version (a
// renewal) starts its lease duration afresh, the same version does not.
func (l *Liveness) Observe(member, version string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s, ok := l.seen[member]; ok && s.version == version {
		return
	}
	l.seen[member] = sighting{version: version, at: now}
}

// Gone records that a member's Lease was deleted: the member left on its
// own, and is not live any more.
func (l *Liveness) Gone(member string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.seen, member)
}

// Live is the sorted list of members live at now.
func (l *Liveness) Live(now time.Time) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var live []string
	for m, s := range l.seen {
		if now.Sub(s.at) < l.duration {
			live = append(live, m)
		}
	}
	slices.Sort(live)
	return live
}

// Expired maps the members whose Leases this observer has seen expire
// (and not deleted) to the version it saw last: members to confirm dead
// with the API server, since a watch that fell behind could have missed
// their renewals.
func (l *Liveness) Expired(now time.Time) map[string]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	expired := map[string]string{}
	for m, s := range l.seen {
		if now.Sub(s.at) >= l.duration {
			expired[m] = s.version
		}
	}
	return expired
}

// NextExpiry is when the next live member expires unless it renews, and
// false if no member is live: when to look again.
func (l *Liveness) NextExpiry(now time.Time) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var next time.Time
	found := false
	for _, s := range l.seen {
		at := s.at.Add(l.duration)
		if at.After(now) && (!found || at.Before(next)) {
			next, found = at, true
		}
	}
	return next, found
}

// Fenced tells a member whether it must stop handling objects: its last
// successful renewal is renewDeadline or more ago. renewDeadline is
// shorter than the lease duration, so a member stops before any observer
// counts it dead and gives its objects to others.
func Fenced(lastRenewal, now time.Time, renewDeadline time.Duration) bool {
	return now.Sub(lastRenewal) >= renewDeadline
}
