package sharding

import (
	"slices"
	"sync"
	"time"
)

// Liveness tells live members from the Leases an observer sees, by the
// observer's own clock, as leader election does: a member is live until
// its Lease has stayed unchanged (same resourceVersion) for its lease
// duration since this observer first saw that version. Clocks of members
// and observers need not agree, only run at about the same rate. A new
// observer knows no history: every Lease it first sees counts as just
// renewed, so that nobody is declared dead before a full lease duration.
//
// A Lease that disappears is not a member that left: only the member's
// own release says that it has stopped (Forget). A Lease deleted by
// someone else stays live until its lease duration has run out, because
// its member may still be working until it notices.
//
// For the same reason a new observer is in doubt, for a lease duration
// from its first listing, about members it has never seen (Doubtful): one
// whose Lease was deleted just before the listing may still be working.
type Liveness struct {
	duration time.Duration

	mu   sync.Mutex
	seen map[string]sighting
	// since is when the observer first listed the Leases; zero before.
	since time.Time
	// forgotten are the members forgotten while in doubt: known gone.
	forgotten map[string]bool
	// ended are all the members ever forgotten: Unseen tells those from
	// members never seen at all.
	ended map[string]bool
	// gone are the members whose Leases this observer knows deleted: it
	// saw the deletion, or found it once already (Vanished).
	gone map[string]bool
}

// sighting is a Lease's version, when this observer first saw it, and how
// long it lasts from then.
type sighting struct {
	version string
	at      time.Time
	lasts   time.Duration
}

// NewLiveness tracks members whose Leases last at least leaseDuration:
// the observer's own setting, which a member's Lease can lengthen but not
// shorten (see Observe).
func NewLiveness(leaseDuration time.Duration) *Liveness {
	return &Liveness{duration: leaseDuration, seen: map[string]sighting{}, forgotten: map[string]bool{}, ended: map[string]bool{}}
}

// Listed records that the observer has listed the Leases, at now: from
// then on it knows every member that a Lease names, and its doubt about
// the others ends a lease duration later. Only the first call counts.
func (l *Liveness) Listed(now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.since.IsZero() {
		l.since = now
	}
}

// Doubting reports whether the observer is still in doubt at now about
// members it has never seen: before a lease duration has passed since
// its first listing (or before that listing). A member whose Lease was
// deleted before the listing fences itself by its renew deadline after
// its last renewal, which was before the listing: before the doubt ends.
func (l *Liveness) Doubting(now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.doubtingLocked(now)
}

func (l *Liveness) doubtingLocked(now time.Time) bool {
	return l.since.IsZero() || now.Before(l.since.Add(l.duration))
}

// Doubtful reports whether a member that is not live may still be
// working at now: the observer is in doubt, has never seen the member's
// Lease, and has not forgotten it.
func (l *Liveness) Doubtful(member string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.doubtingLocked(now) {
		l.forgotten = nil // nobody is in doubt any more
		return false
	}
	_, seen := l.seen[member]
	return !seen && !l.forgotten[member]
}

// Observe records a member's Lease as seen at now; a new version (a
// renewal) starts its lease duration afresh, the same version does not.
// declared is the lease duration the Lease itself states: a member
// configured with a longer one than this observer (during a rollout that
// changes the durations) fences itself later, and is counted live for as
// long. A shorter one does not shorten the observer's: the larger of the
// two is never too early, and a Lease edited by hand cannot make its
// member expire before the member fences itself.
func (l *Liveness) Observe(member, version string, declared time.Duration, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s, ok := l.seen[member]; ok && s.version == version {
		return
	}
	l.seen[member] = sighting{version: version, at: now, lasts: max(l.duration, declared)}
}

// SawGone records that the observer saw the member's Lease deleted (its
// watch's event): the renewals it saw until then are all there were, so
// the member is dead once its lease has run out from the last of them.
func (l *Liveness) SawGone(member string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.gone == nil {
		l.gone = map[string]bool{}
	}
	l.gone[member] = true
}

// Vanished records that the API server answered, at now, that the
// member's Lease is gone, and reports whether its death is certain. It
// is if the observer saw the deletion, or was told so once before, a
// lease duration ago. If not, the observer may have missed the member's
// last renewals (a watch of the Leases that is stuck) just before someone
// deleted the Lease: the member may be working until its renew deadline
// after a renewal this observer never saw, so it stays live for a lease
// duration from now, and is asked about again then.
func (l *Liveness) Vanished(member string, now time.Time) (dead bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.gone[member] {
		return true
	}
	if l.gone == nil {
		l.gone = map[string]bool{}
	}
	l.gone[member] = true
	s := l.seen[member]
	l.seen[member] = sighting{version: s.version + "/vanished", at: now, lasts: max(l.duration, s.lasts)}
	return false
}

// Forget records that a member is no longer one: it released its Lease
// after it had stopped, or its death was confirmed.
func (l *Liveness) Forget(member string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.seen, member)
	delete(l.gone, member)
	l.ended[member] = true
	if l.forgotten != nil {
		l.forgotten[member] = true
	}
}

// Unseen reports whether the observer knows nothing of a member: it never
// saw its Lease, nor forgot it. Past the doubt, such a member is dead,
// unless the observer's watch of the Leases is the one that is stuck; the
// assigner asks the API server before it moves the member's objects.
func (l *Liveness) Unseen(member string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, seen := l.seen[member]
	return !seen && !l.ended[member]
}

// IsLive reports whether a member is live at now.
func (l *Liveness) IsLive(member string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	s, ok := l.seen[member]
	return ok && now.Sub(s.at) < s.lasts
}

// Live is the sorted list of members live at now.
func (l *Liveness) Live(now time.Time) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var live []string
	for m, s := range l.seen {
		if now.Sub(s.at) < s.lasts {
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
		if now.Sub(s.at) >= s.lasts {
			expired[m] = s.version
		}
	}
	return expired
}

// Silent maps the live members whose Leases have gone unrenewed, by this
// observer's clock, for at least after at now to the version seen last:
// members that may die at the end of their lease durations.
func (l *Liveness) Silent(now time.Time, after time.Duration) map[string]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	silent := map[string]string{}
	for m, s := range l.seen {
		if quiet := now.Sub(s.at); quiet >= after && quiet < s.lasts {
			silent[m] = s.version
		}
	}
	return silent
}

// NextExpiry is when the next live member expires unless it renews, or
// the observer's doubt ends, whichever is first; false if neither is
// ahead: when to look again.
func (l *Liveness) NextExpiry(now time.Time) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var next time.Time
	found := false
	if doubtEnds := l.since.Add(l.duration); !l.since.IsZero() && doubtEnds.After(now) {
		next, found = doubtEnds, true
	}
	for _, s := range l.seen {
		at := s.at.Add(s.lasts)
		if at.After(now) && (!found || at.Before(next)) {
			next, found = at, true
		}
	}
	return next, found
}
