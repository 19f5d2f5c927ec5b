package peering

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	kopfv1 "github.com/kopf-go/kopf/pkg/apis/kopf/v1"
)

// now is the frozen time of Kopf's peering tests: 2020-12-31T23:59:59.123456.
var now = time.Date(2020, 12, 31, 23, 59, 59, 123456000, time.UTC)

func intp(i int) *int { return &i }

func TestFromRecord(t *testing.T) {
	tests := []struct {
		name   string
		record kopfv1.Peer
		want   Peer
	}{
		{
			name:   "an empty record is priority 0, lives 60 s, just seen",
			record: kopfv1.Peer{},
			want:   Peer{Identity: "id", Priority: 0, Lifetime: 60 * time.Second, LastSeen: now},
		},
		{
			name:   "a ring's member says its ring",
			record: kopfv1.Peer{Priority: 100, Lifetime: intp(60), Ring: "main"},
			want:   Peer{Identity: "id", Priority: 100, Lifetime: 60 * time.Second, LastSeen: now, Ring: "main"},
		},
		{
			name:   "no lifetime lives 60 s",
			record: kopfv1.Peer{Priority: 100, LastSeen: "2020-12-31T23:59:50.123456+00:00"},
			want: Peer{Identity: "id", Priority: 100, Lifetime: 60 * time.Second,
				LastSeen: time.Date(2020, 12, 31, 23, 59, 50, 123456000, time.UTC)},
		},
		{
			name:   "no lastseen counts as just seen",
			record: kopfv1.Peer{Priority: 100, Lifetime: intp(123)},
			want:   Peer{Identity: "id", Priority: 100, Lifetime: 123 * time.Second, LastSeen: now},
		},
		{
			name:   "an explicit zero lifetime is kept",
			record: kopfv1.Peer{Priority: 100, Lifetime: intp(0)},
			want:   Peer{Identity: "id", Priority: 100, Lifetime: 0, LastSeen: now},
		},
		{
			name:   "lastseen with microseconds and +00:00, as Kopf writes",
			record: kopfv1.Peer{Priority: 100, Lifetime: intp(60), LastSeen: "2020-01-01T12:34:56.789123+00:00"},
			want: Peer{Identity: "id", Priority: 100, Lifetime: 60 * time.Second,
				LastSeen: time.Date(2020, 1, 1, 12, 34, 56, 789123000, time.UTC)},
		},
		{
			name:   "lastseen with Z",
			record: kopfv1.Peer{Priority: 100, Lifetime: intp(60), LastSeen: "2020-01-01T12:34:56.789123Z"},
			want: Peer{Identity: "id", Priority: 100, Lifetime: 60 * time.Second,
				LastSeen: time.Date(2020, 1, 1, 12, 34, 56, 789123000, time.UTC)},
		},
		{
			name:   "lastseen without a fraction",
			record: kopfv1.Peer{Priority: 100, Lifetime: intp(60), LastSeen: "2020-01-01T12:34:56+00:00"},
			want: Peer{Identity: "id", Priority: 100, Lifetime: 60 * time.Second,
				LastSeen: time.Date(2020, 1, 1, 12, 34, 56, 0, time.UTC)},
		},
		{
			name:   "naive lastseen with microseconds is UTC",
			record: kopfv1.Peer{Priority: 100, Lifetime: intp(60), LastSeen: "2020-01-01T12:34:56.789123"},
			want: Peer{Identity: "id", Priority: 100, Lifetime: 60 * time.Second,
				LastSeen: time.Date(2020, 1, 1, 12, 34, 56, 789123000, time.UTC)},
		},
		{
			name:   "naive lastseen without a fraction is UTC",
			record: kopfv1.Peer{Priority: 100, Lifetime: intp(60), LastSeen: "2020-12-31T23:59:59"},
			want: Peer{Identity: "id", Priority: 100, Lifetime: 60 * time.Second,
				LastSeen: time.Date(2020, 12, 31, 23, 59, 59, 0, time.UTC)},
		},
		{
			name:   "lastseen in another zone",
			record: kopfv1.Peer{Priority: 100, Lifetime: intp(60), LastSeen: "2021-01-01T01:59:59.123456+02:00"},
			want:   Peer{Identity: "id", Priority: 100, Lifetime: 60 * time.Second, LastSeen: now},
		},
		{
			name:   "an unparseable lastseen makes the record dead",
			record: kopfv1.Peer{Priority: 100, Lifetime: intp(60), LastSeen: "yesterday"},
			want:   Peer{Identity: "id", Priority: 100, Lifetime: 60 * time.Second, LastSeen: time.Time{}},
		},
		{
			name:   "the message is kept",
			record: kopfv1.Peer{Priority: 666, Lifetime: intp(3600), LastSeen: "2020-12-31T23:59:59.123456+00:00", Message: "debugging"},
			want:   Peer{Identity: "id", Priority: 666, Lifetime: time.Hour, LastSeen: now, Message: "debugging"},
		},
		{
			name:   "a negative priority is kept",
			record: kopfv1.Peer{Priority: -5, Lifetime: intp(60)},
			want:   Peer{Identity: "id", Priority: -5, Lifetime: 60 * time.Second, LastSeen: now},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := FromRecord("id", &tt.record, now)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("FromRecord() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFromRecordUnparseableIsDead(t *testing.T) {
	for _, lastseen := range []string{"yesterday", "2020-12-31", "23:59:59", "2020-13-01T00:00:00"} {
		t.Run(lastseen, func(t *testing.T) {
			p := FromRecord("id", &kopfv1.Peer{Priority: 100, Lifetime: intp(1 << 30), LastSeen: lastseen}, now)
			if p.Deadline().After(now) {
				t.Errorf("Deadline() = %v, want at or before %v (dead)", p.Deadline(), now)
			}
		})
	}
}

// TestFromRecordJSON decodes records as stored in a peering object, with
// fields this version does not know (a newer Kopf may write more).
func TestFromRecordJSON(t *testing.T) {
	tests := []struct {
		name string
		json string
		want Peer
	}{
		{
			name: "Kopf's record",
			json: `{"priority": 100, "lifetime": 60, "lastseen": "2020-12-31T23:59:59.123456+00:00"}`,
			want: Peer{Identity: "id", Priority: 100, Lifetime: 60 * time.Second, LastSeen: now},
		},
		{
			name: "unknown fields are tolerated",
			json: `{"priority": 100, "lifetime": 60, "lastseen": "2020-12-31T23:59:59.123456+00:00",
				"namespace": "ns", "future": {"nested": [1, 2]}, "flag": true}`,
			want: Peer{Identity: "id", Priority: 100, Lifetime: 60 * time.Second, LastSeen: now},
		},
		{
			name: "only a priority",
			json: `{"priority": 200}`,
			want: Peer{Identity: "id", Priority: 200, Lifetime: 60 * time.Second, LastSeen: now},
		},
		{
			name: "explicit nulls count as absent",
			json: `{"priority": 200, "lifetime": null, "lastseen": null, "message": null}`,
			want: Peer{Identity: "id", Priority: 200, Lifetime: 60 * time.Second, LastSeen: now},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r kopfv1.Peer
			if err := json.Unmarshal([]byte(tt.json), &r); err != nil {
				t.Fatalf("decode the record: %v", err)
			}
			if diff := cmp.Diff(tt.want, FromRecord("id", &r, now)); diff != "" {
				t.Errorf("FromRecord() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDeadline(t *testing.T) {
	tests := []struct {
		name string
		peer Peer
		want time.Time
	}{
		{"Kopf's alive peer", Peer{Lifetime: 10 * time.Second, LastSeen: time.Date(2020, 12, 31, 23, 59, 50, 123456000, time.UTC)},
			time.Date(2021, 1, 1, 0, 0, 0, 123456000, time.UTC)},
		{"Kopf's dead peer", Peer{Lifetime: 10 * time.Second, LastSeen: time.Date(2020, 12, 31, 23, 59, 49, 123456000, time.UTC)},
			now},
		{"zero lifetime", Peer{Lifetime: 0, LastSeen: now}, now},
		{"negative lifetime", Peer{Lifetime: -time.Minute, LastSeen: now}, now.Add(-time.Minute)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.peer.Deadline()); diff != "" {
				t.Errorf("Deadline() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPeerString(t *testing.T) {
	tests := []struct {
		name string
		peer Peer
		want string
	}{
		{
			name: "Kopf's repr",
			peer: Peer{Identity: "some-id", Priority: 0, Lifetime: 60 * time.Second, LastSeen: now},
			want: "<Peer some-id: priority=0, lifetime=60, lastseen='2020-12-31T23:59:59.123456+00:00'>",
		},
		{
			name: "priority and lifetime",
			peer: Peer{Identity: "user@host/20201231235959/abc", Priority: 100, Lifetime: 33 * time.Second, LastSeen: now},
			want: "<Peer user@host/20201231235959/abc: priority=100, lifetime=33, lastseen='2020-12-31T23:59:59.123456+00:00'>",
		},
		{
			name: "lastseen in UTC with microseconds",
			peer: Peer{Identity: "id", Priority: 100, Lifetime: 60 * time.Second,
				LastSeen: time.Date(2021, 1, 1, 2, 0, 0, 987654321, time.FixedZone("EET", 2*3600))},
			want: "<Peer id: priority=100, lifetime=60, lastseen='2021-01-01T00:00:00.987654+00:00'>",
		},
		{
			name: "lifetime in whole seconds",
			peer: Peer{Identity: "id", Priority: 100, Lifetime: 90*time.Second + 900*time.Millisecond, LastSeen: now},
			want: "<Peer id: priority=100, lifetime=90, lastseen='2020-12-31T23:59:59.123456+00:00'>",
		},
		{
			name: "message shown when set",
			peer: Peer{Identity: "id", Priority: 666, Lifetime: time.Hour, LastSeen: now, Message: "debugging"},
			want: `<Peer id: priority=666, lifetime=3600, lastseen='2020-12-31T23:59:59.123456+00:00', message="debugging">`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.peer.String()); diff != "" {
				t.Errorf("String() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRecord(t *testing.T) {
	tests := []struct {
		name string
		peer Peer
		want string
	}{
		{
			name: "Kopf's keys and format",
			peer: Peer{Identity: "id1", Priority: 0, Lifetime: 60 * time.Second, LastSeen: now},
			want: `{"priority":0,"lifetime":60,"lastseen":"2020-12-31T23:59:59.123456+00:00"}`,
		},
		{
			name: "lastseen in UTC, cut to microseconds",
			peer: Peer{Identity: "id1", Priority: 100, Lifetime: 33 * time.Second,
				LastSeen: time.Date(2021, 1, 1, 2, 0, 0, 987654321, time.FixedZone("EET", 2*3600))},
			want: `{"priority":100,"lifetime":33,"lastseen":"2021-01-01T00:00:00.987654+00:00"}`,
		},
		{
			name: "lastseen without a fraction still has microseconds",
			peer: Peer{Identity: "id1", Priority: 100, Lifetime: 60 * time.Second, LastSeen: time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)},
			want: `{"priority":100,"lifetime":60,"lastseen":"2020-01-01T00:00:00.000000+00:00"}`,
		},
		{
			name: "message only when set",
			peer: Peer{Identity: "id1", Priority: 666, Lifetime: time.Hour, LastSeen: now, Message: "debugging"},
			want: `{"priority":666,"lifetime":3600,"lastseen":"2020-12-31T23:59:59.123456+00:00","message":"debugging"}`,
		},
		{
			name: "a ring only when set, as an extra key that Kopf ignores",
			peer: Peer{Identity: "id1", Priority: 100, Lifetime: 60 * time.Second, LastSeen: now, Ring: "main"},
			want: `{"priority":100,"lifetime":60,"lastseen":"2020-12-31T23:59:59.123456+00:00","ring":"main"}`,
		},
		{
			name: "a zero lifetime is written",
			peer: Peer{Identity: "id1", Priority: 100, Lifetime: 0, LastSeen: now},
			want: `{"priority":100,"lifetime":0,"lastseen":"2020-12-31T23:59:59.123456+00:00"}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw, err := json.Marshal(tt.peer.Record())
			if err != nil {
				t.Fatalf("encode the record: %v", err)
			}
			if diff := cmp.Diff(tt.want, string(raw)); diff != "" {
				t.Errorf("Record() JSON mismatch (-want +got):\n%s", diff)
			}

			// Round trip: what is written reads back as the same peer (at
			// the microsecond precision of the record).
			var r kopfv1.Peer
			if err := json.Unmarshal(raw, &r); err != nil {
				t.Fatalf("decode the record: %v", err)
			}
			want := tt.peer
			want.LastSeen = tt.peer.LastSeen.UTC().Truncate(time.Microsecond)
			want.Lifetime = tt.peer.Lifetime.Truncate(time.Second)
			if diff := cmp.Diff(want, FromRecord(tt.peer.Identity, &r, now)); diff != "" {
				t.Errorf("round trip mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRecordKeys pins the exact keys Kopf writes and reads.
func TestRecordKeys(t *testing.T) {
	raw, err := json.Marshal(Peer{Identity: "id1", Priority: 100, Lifetime: 60 * time.Second, LastSeen: now}.Record())
	if err != nil {
		t.Fatalf("encode the record: %v", err)
	}
	var got map[string]any
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatalf("decode the record: %v", err)
	}
	want := map[string]any{"priority": 100.0, "lifetime": 60.0, "lastseen": "2020-12-31T23:59:59.123456+00:00"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("record keys mismatch (-want +got):\n%s", diff)
	}
}

// record is a stored record that was last seen ago before now.
func record(priority, lifetime int, ago time.Duration) *kopfv1.Peer {
	return &kopfv1.Peer{Priority: priority, Lifetime: intp(lifetime), LastSeen: now.Add(-ago).Format(time.RFC3339Nano)}
}

// peer is the Peer that record(...) reads as.
func peer(id string, priority, lifetime int, ago time.Duration) Peer {
	return Peer{Identity: id, Priority: priority, Lifetime: time.Duration(lifetime) * time.Second, LastSeen: now.Add(-ago)}
}

func TestJudge(t *testing.T) {
	tests := []struct {
		name     string
		status   map[string]*kopfv1.Peer
		priority int
		ring     string
		want     Verdict
	}{
		{
			name:     "no status",
			status:   nil,
			priority: 100,
			want:     Verdict{},
		},
		{
			name:     "only self",
			status:   map[string]*kopfv1.Peer{"self": record(100, 60, 0)},
			priority: 100,
			want:     Verdict{Peers: []Peer{peer("self", 100, 60, 0)}},
		},
		{
			name:     "self with another priority in its record is still self",
			status:   map[string]*kopfv1.Peer{"self": record(500, 60, 0)},
			priority: 100,
			want:     Verdict{Peers: []Peer{peer("self", 500, 60, 0)}},
		},
		{
			name: "a higher priority peer freezes",
			status: map[string]*kopfv1.Peer{
				"self":   record(100, 60, 0),
				"higher": record(200, 60, 30*time.Second),
			},
			priority: 100,
			want: Verdict{
				Higher: []Peer{peer("higher", 200, 60, 30*time.Second)},
				Peers:  []Peer{peer("higher", 200, 60, 30*time.Second), peer("self", 100, 60, 0)},
				Wake:   now.Add(30 * time.Second),
			},
		},
		{
			name: "a same priority peer freezes",
			status: map[string]*kopfv1.Peer{
				"self": record(100, 60, 0),
				"same": record(100, 60, 50*time.Second),
			},
			priority: 100,
			want: Verdict{
				Same:  []Peer{peer("same", 100, 60, 50*time.Second)},
				Peers: []Peer{peer("same", 100, 60, 50*time.Second), peer("self", 100, 60, 0)},
				Wake:  now.Add(10 * time.Second),
			},
		},
		{
			name: "lower priorities are ignored",
			status: map[string]*kopfv1.Peer{
				"lower1": record(99, 60, 59*time.Second),
				"lower2": record(-1, 60, 0),
			},
			priority: 100,
			want: Verdict{
				Peers: []Peer{peer("lower1", 99, 60, 59*time.Second), peer("lower2", -1, 60, 0)},
			},
		},
		{
			name: "dead records are listed for cleanup, a deadline at now included",
			status: map[string]*kopfv1.Peer{
				"long-dead":      record(200, 60, time.Hour),
				"just-dead":      record(200, 60, 60*time.Second),
				"almost-dead":    record(200, 60, 60*time.Second-time.Microsecond),
				"zero-lifetime":  {Priority: 200, Lifetime: intp(0)},
				"unparseable":    {Priority: 200, Lifetime: intp(60), LastSeen: "yesterday"},
				"negative":       record(200, -1, 0),
				"kopf-dead-peer": {Priority: 200, Lifetime: intp(10), LastSeen: "2020-12-31T23:59:49.123456"},
			},
			priority: 100,
			want: Verdict{
				Dead:   []string{"just-dead", "kopf-dead-peer", "long-dead", "negative", "unparseable", "zero-lifetime"},
				Higher: []Peer{peer("almost-dead", 200, 60, 60*time.Second-time.Microsecond)},
				Peers:  []Peer{peer("almost-dead", 200, 60, 60*time.Second-time.Microsecond)},
				Wake:   now.Add(time.Microsecond),
			},
		},
		{
			name:     "a dead self is cleaned up too",
			status:   map[string]*kopfv1.Peer{"self": record(100, 60, 2*time.Minute)},
			priority: 100,
			want:     Verdict{Dead: []string{"self"}},
		},
		{
			name: "nil records (JSON null) are skipped",
			status: map[string]*kopfv1.Peer{
				"gone":   nil,
				"higher": record(200, 60, 0),
			},
			priority: 100,
			want: Verdict{
				Higher: []Peer{peer("higher", 200, 60, 0)},
				Peers:  []Peer{peer("higher", 200, 60, 0)},
				Wake:   now.Add(60 * time.Second),
			},
		},
		{
			name: "wake is the earliest deadline among higher and same, not lower",
			status: map[string]*kopfv1.Peer{
				"self":    record(100, 60, 0),
				"higher1": record(200, 60, 20*time.Second),
				"higher2": record(300, 60, 40*time.Second),
				"same":    record(100, 60, 30*time.Second),
				"lower":   record(50, 60, 59*time.Second),
			},
			priority: 100,
			want: Verdict{
				Higher: []Peer{peer("higher1", 200, 60, 20*time.Second), peer("higher2", 300, 60, 40*time.Second)},
				Same:   []Peer{peer("same", 100, 60, 30*time.Second)},
				Peers: []Peer{
					peer("higher1", 200, 60, 20*time.Second), peer("higher2", 300, 60, 40*time.Second),
					peer("lower", 50, 60, 59*time.Second), peer("same", 100, 60, 30*time.Second),
					peer("self", 100, 60, 0),
				},
				Wake: now.Add(20 * time.Second),
			},
		},
		{
			name: "wake can come from a same-priority peer",
			status: map[string]*kopfv1.Peer{
				"higher": record(200, 60, 0),
				"same":   record(100, 60, 55*time.Second),
			},
			priority: 100,
			want: Verdict{
				Higher: []Peer{peer("higher", 200, 60, 0)},
				Same:   []Peer{peer("same", 100, 60, 55*time.Second)},
				Peers:  []Peer{peer("higher", 200, 60, 0), peer("same", 100, 60, 55*time.Second)},
				Wake:   now.Add(5 * time.Second),
			},
		},
		{
			name: "members of one ring freeze none of each other, whatever their priorities",
			status: map[string]*kopfv1.Peer{
				"mate-same":   {Priority: 100, Lifetime: intp(60), LastSeen: "2020-12-31T23:59:59.123456+00:00", Ring: "main"},
				"mate-higher": {Priority: 200, Lifetime: intp(60), LastSeen: "2020-12-31T23:59:59.123456+00:00", Ring: "main"},
			},
			priority: 100,
			ring:     "main",
			want: Verdict{Peers: []Peer{
				{Identity: "mate-higher", Priority: 200, Lifetime: 60 * time.Second, LastSeen: now, Ring: "main"},
				{Identity: "mate-same", Priority: 100, Lifetime: 60 * time.Second, LastSeen: now, Ring: "main"},
			}},
		},
		{
			name: "a peer of another ring, or of none, freezes a ring's member as any peer does",
			status: map[string]*kopfv1.Peer{
				"other-ring": {Priority: 100, Lifetime: intp(60), LastSeen: "2020-12-31T23:59:59.123456+00:00", Ring: "other"},
				"plain":      {Priority: 200, Lifetime: intp(60), LastSeen: "2020-12-31T23:59:59.123456+00:00"},
			},
			priority: 100,
			ring:     "main",
			want: Verdict{
				Higher: []Peer{{Identity: "plain", Priority: 200, Lifetime: 60 * time.Second, LastSeen: now}},
				Same:   []Peer{{Identity: "other-ring", Priority: 100, Lifetime: 60 * time.Second, LastSeen: now, Ring: "other"}},
				Peers: []Peer{
					{Identity: "other-ring", Priority: 100, Lifetime: 60 * time.Second, LastSeen: now, Ring: "other"},
					{Identity: "plain", Priority: 200, Lifetime: 60 * time.Second, LastSeen: now},
				},
				Wake: now.Add(60 * time.Second),
			},
		},
		{
			name: "an operator outside rings is frozen by a ring's member as by any peer",
			status: map[string]*kopfv1.Peer{
				"member": {Priority: 100, Lifetime: intp(60), LastSeen: "2020-12-31T23:59:59.123456+00:00", Ring: "main"},
			},
			priority: 100,
			want: Verdict{
				Same:  []Peer{{Identity: "member", Priority: 100, Lifetime: 60 * time.Second, LastSeen: now, Ring: "main"}},
				Peers: []Peer{{Identity: "member", Priority: 100, Lifetime: 60 * time.Second, LastSeen: now, Ring: "main"}},
				Wake:  now.Add(60 * time.Second),
			},
		},
		{
			name: "a record without lastseen is live for its lifetime from now",
			status: map[string]*kopfv1.Peer{
				"higher": {Priority: 200},
			},
			priority: 100,
			want: Verdict{
				Higher: []Peer{{Identity: "higher", Priority: 200, Lifetime: 60 * time.Second, LastSeen: now}},
				Peers:  []Peer{{Identity: "higher", Priority: 200, Lifetime: 60 * time.Second, LastSeen: now}},
				Wake:   now.Add(60 * time.Second),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Judge(tt.status, Self{Identity: "self", Priority: tt.priority, Ring: tt.ring}, now)
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Judge() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestJudgeOrder checks that the verdict does not depend on the map's
// iteration order: identities come sorted.
func TestJudgeOrder(t *testing.T) {
	status := map[string]*kopfv1.Peer{}
	ids := []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}
	var want Verdict
	for i, id := range ids {
		status[id] = record(200, 60, time.Duration(i)*time.Second)
		status["dead-"+id] = record(200, 60, time.Hour)
		status["same-"+id] = record(100, 60, 0)
		want.Dead = append(want.Dead, "dead-"+id)
		want.Higher = append(want.Higher, peer(id, 200, 60, time.Duration(i)*time.Second))
		want.Same = append(want.Same, peer("same-"+id, 100, 60, 0))
	}
	want.Peers = append(append([]Peer{}, want.Higher...), want.Same...)
	want.Wake = now.Add(51 * time.Second)
	for range 20 {
		if diff := cmp.Diff(want, Judge(status, Self{Identity: "self", Priority: 100}, now)); diff != "" {
			t.Fatalf("Judge() mismatch (-want +got):\n%s", diff)
		}
	}
}

func TestList(t *testing.T) {
	a := Peer{Identity: "a", Priority: 100, Lifetime: 60 * time.Second, LastSeen: now}
	b := Peer{Identity: "b", Priority: 200, Lifetime: 30 * time.Second, LastSeen: now, Message: "hi"}
	tests := []struct {
		name  string
		peers []Peer
		want  string
	}{
		{"none", nil, "[]"},
		{"one", []Peer{a}, "[<Peer a: priority=100, lifetime=60, lastseen='2020-12-31T23:59:59.123456+00:00'>]"},
		{"two", []Peer{a, b}, "[<Peer a: priority=100, lifetime=60, lastseen='2020-12-31T23:59:59.123456+00:00'>, " +
			`<Peer b: priority=200, lifetime=30, lastseen='2020-12-31T23:59:59.123456+00:00', message="hi">]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, list(tt.peers)); diff != "" {
				t.Errorf("list() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
