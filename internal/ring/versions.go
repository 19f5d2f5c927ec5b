package ring

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/resourceversion"
)

// versionLog keeps the resourceVersions that the assigner's follower saw,
// by when it saw them, so that a retirement can name a version written a
// margin before it (sharding.Epoch's WrittenBefore): a version seen at
// some moment was written at that moment or before, and one written
// after it is newer, since both come from the API server's one order of
// writes. A candidate follows the Leases before it leads, for as long as
// it stands, so what is older than keep is folded into one version as it
// goes.
type versionLog struct {
	keep time.Duration

	mu sync.Mutex
	// folded is the newest version seen at or before foldedUpTo, the
	// moment up to which the log holds nothing else.
	folded     string
	foldedUpTo time.Time
	recent     []sightedVersion
	// incomparable: a version seen was not a decimal; the log answers
	// nothing from then on.
	incomparable bool
}

type sightedVersion struct {
	version string
	at      time.Time
}

// saw records a version seen at now.
func (l *versionLog) saw(version string, now time.Time) {
	if version == "" {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recent = append(l.recent, sightedVersion{version, now})
	l.foldUpTo(now.Add(-l.keep))
}

// before is the newest version seen at or before t; "" if none was, if t
// is older than what the log keeps, or if the versions do not compare.
func (l *versionLog) before(t time.Time) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if t.Before(l.foldedUpTo) {
		return ""
	}
	l.foldUpTo(t)
	if l.incomparable {
		return ""
	}
	return l.folded
}

// foldUpTo folds the versions seen at or before t into one (the caller
// holds mu).
func (l *versionLog) foldUpTo(t time.Time) {
	n := 0
	for _, s := range l.recent {
		if s.at.After(t) {
			l.recent[n] = s
			n++
			continue
		}
		c, err := resourceversion.CompareResourceVersion(s.version, l.folded)
		switch {
		case l.folded == "":
			l.folded = s.version
		case err != nil:
			l.incomparable = true
		case c > 0:
			l.folded = s.version
		}
	}
	l.recent = l.recent[:n]
	if t.After(l.foldedUpTo) {
		l.foldedUpTo = t
	}
}
