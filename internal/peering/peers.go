// Package peering lets operators that serve the same resources see each
// other, as Kopf's peering does: each writes a keep-alive record into a
// peering object's status, and an operator freezes while a live peer of
// higher (or equal) priority is there. There are no per-object locks: the
// aim is that one operator serves, and the others wait.
package peering

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/kopf-go/kopf/internal/isotime"
	kopfv1 "github.com/kopf-go/kopf/pkg/apis/kopf/v1"
)

// DefaultLifetime is how long a peer record is valid by default (and for
// records that do not say).
const DefaultLifetime = 60 * time.Second

// Peer is one live or dead record of a peering object.
type Peer struct {
	Identity string
	Priority int
	Lifetime time.Duration
	LastSeen time.Time
	Message  string
	// Ring is the shard ring of the peer, if it is a member of one.
	Ring string
}

// Deadline is when the record expires.
func (p Peer) Deadline() time.Time { return p.LastSeen.Add(p.Lifetime) }

// String renders the peer as Kopf's log lines do.
func (p Peer) String() string {
	s := fmt.Sprintf("<Peer %s: priority=%d, lifetime=%d, lastseen='%s'", p.Identity, p.Priority,
		int(p.Lifetime.Seconds()), isotime.Format(p.LastSeen))
	if p.Message != "" {
		s += fmt.Sprintf(", message=%q", p.Message)
	}
	if p.Ring != "" {
		s += fmt.Sprintf(", ring=%q", p.Ring)
	}
	return s + ">"
}

// Record is the peer's record as written into the peering object.
func (p Peer) Record() *kopfv1.Peer {
	lifetime := int(p.Lifetime.Seconds())
	return &kopfv1.Peer{Priority: p.Priority, Lifetime: &lifetime, LastSeen: isotime.Format(p.LastSeen), Message: p.Message, Ring: p.Ring}
}

// FromRecord reads a record written by Kopf or kopf-go. As in Kopf, a
// record without a lifetime lives 60 seconds, and one without a time is
// taken as just seen; an unreadable time makes the record dead.
func FromRecord(identity string, r *kopfv1.Peer, now time.Time) Peer {
	p := Peer{Identity: identity, Priority: r.Priority, Lifetime: DefaultLifetime, LastSeen: now, Message: r.Message, Ring: r.Ring}
	if r.Lifetime != nil {
		p.Lifetime = time.Duration(*r.Lifetime) * time.Second
	}
	if r.LastSeen != "" {
		t, err := isotime.Parse(r.LastSeen)
		if err != nil {
			t = time.Time{}
		}
		p.LastSeen = t
	}
	return p
}

// Verdict is what one look at a peering object concludes.
type Verdict struct {
	// Dead are the identities of expired records, to be removed.
	Dead []string
	// Higher and Same are the live peers (other than self) of higher and
	// of the same priority: either freezes this operator.
	Higher, Same []Peer
	// Peers are all live records, self included.
	Peers []Peer
	// Wake is when the earliest of the freezing peers expires, if any.
	Wake time.Time
}

// Self is the operator that judges: its identity, priority and ring.
type Self struct {
	Identity string
	Priority int
	// Ring: the members of the same shard ring share the objects, so none
	// of them freezes the others, whatever their priorities.
	Ring string
}

// Judge reads the peering object's records from the point of view of
// self.
func Judge(status map[string]*kopfv1.Peer, self Self, now time.Time) Verdict {
	var v Verdict
	ids := make([]string, 0, len(status))
	for id := range status {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		r := status[id]
		if r == nil {
			continue // a record being removed
		}
		p := FromRecord(id, r, now)
		if !p.Deadline().After(now) {
			v.Dead = append(v.Dead, id)
			continue
		}
		v.Peers = append(v.Peers, p)
		if id == self.Identity || self.Ring != "" && p.Ring == self.Ring {
			continue
		}
		switch {
		case p.Priority > self.Priority:
			v.Higher = append(v.Higher, p)
		case p.Priority == self.Priority:
			v.Same = append(v.Same, p)
		default:
			continue
		}
		if v.Wake.IsZero() || p.Deadline().Before(v.Wake) {
			v.Wake = p.Deadline()
		}
	}
	return v
}

// list renders peers as Kopf's log lines do: [<Peer a: ...>, <Peer b: ...>].
func list(peers []Peer) string {
	parts := make([]string, len(peers))
	for i, p := range peers {
		parts[i] = p.String()
	}
	return "[" + strings.Join(parts, ", ") + "]"
}
