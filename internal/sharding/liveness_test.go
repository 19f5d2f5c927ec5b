package sharding

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

// The liveness of members over time, as one observer sees their Leases.
func TestLiveness(t *testing.T) {
	const lease = 15 * time.Second
	type step struct {
		at      time.Duration // since t0
		observe map[string]string
		// declared is the lease duration the observed Leases state.
		declared time.Duration
		forget   []string
		live     []string // after the step's sightings and deletions
		// expired are the members seen expired, with their last versions.
		expired map[string]string
	}
	tests := []struct {
		name  string
		steps []step
	}{{
		name: "a Lease seen once is live for a lease duration from the sighting, not from its renewTime",
		steps: []step{
			{at: 0, observe: map[string]string{"a": "1"}, live: []string{"a"}},
			{at: 14 * time.Second, live: []string{"a"}},
			{at: 15 * time.Second, live: nil, expired: map[string]string{"a": "1"}},
		},
	}, {
		name: "a renewal (a new version) starts the duration afresh",
		steps: []step{
			{at: 0, observe: map[string]string{"a": "1"}, live: []string{"a"}},
			{at: 10 * time.Second, observe: map[string]string{"a": "2"}, live: []string{"a"}},
			{at: 24 * time.Second, live: []string{"a"}},
			{at: 25 * time.Second, live: nil, expired: map[string]string{"a": "2"}},
		},
	}, {
		name: "the same version seen again does not renew (a resync, a re-list)",
		steps: []step{
			{at: 0, observe: map[string]string{"a": "1"}, live: []string{"a"}},
			{at: 10 * time.Second, observe: map[string]string{"a": "1"}, live: []string{"a"}},
			{at: 15 * time.Second, live: nil, expired: map[string]string{"a": "1"}},
		},
	}, {
		name: "a member forgotten (released, or confirmed dead) is not live, at once",
		steps: []step{
			{at: 0, observe: map[string]string{"a": "1", "b": "7"}, live: []string{"a", "b"}},
			{at: time.Second, forget: []string{"a"}, live: []string{"b"}},
			{at: 20 * time.Second, live: nil, expired: map[string]string{"b": "7"}},
		},
	}, {
		name: "a longer lease duration stated by the Lease is honoured (a member of an earlier rollout)",
		steps: []step{
			{at: 0, observe: map[string]string{"a": "1"}, declared: 30 * time.Second, live: []string{"a"}},
			{at: 29 * time.Second, live: []string{"a"}},
			{at: 30 * time.Second, live: nil, expired: map[string]string{"a": "1"}},
		},
	}, {
		name: "a shorter lease duration stated by the Lease does not shorten the observer's (a hand edit)",
		steps: []step{
			{at: 0, observe: map[string]string{"a": "1"}, declared: time.Second, live: []string{"a"}},
			{at: 14 * time.Second, live: []string{"a"}},
			{at: 15 * time.Second, live: nil, expired: map[string]string{"a": "1"}},
		},
	}, {
		name: "an expired member renewing comes back",
		steps: []step{
			{at: 0, observe: map[string]string{"a": "1"}, live: []string{"a"}},
			{at: 20 * time.Second, live: nil, expired: map[string]string{"a": "1"}},
			{at: 21 * time.Second, observe: map[string]string{"a": "2"}, live: []string{"a"}},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := NewLiveness(lease)
			for _, s := range tt.steps {
				now := t0.Add(s.at)
				for m, v := range s.observe {
					l.Observe(m, v, s.declared, now)
				}
				for _, m := range s.forget {
					l.Forget(m)
				}
				if diff := cmp.Diff(s.live, l.Live(now)); diff != "" {
					t.Errorf("at %s: live -want +got:\n%s", s.at, diff)
				}
				want := s.expired
				if want == nil {
					want = map[string]string{}
				}
				if diff := cmp.Diff(want, l.Expired(now)); diff != "" {
					t.Errorf("at %s: expired -want +got:\n%s", s.at, diff)
				}
			}
		})
	}
}

func TestNextExpiry(t *testing.T) {
	l := NewLiveness(15 * time.Second)
	if _, ok := l.NextExpiry(t0); ok {
		t.Error("NextExpiry() without members found one")
	}
	l.Observe("a", "1", 0, t0)
	l.Observe("b", "1", 0, t0.Add(5*time.Second))
	got, ok := l.NextExpiry(t0.Add(6 * time.Second))
	if want := t0.Add(15 * time.Second); !ok || !got.Equal(want) {
		t.Errorf("NextExpiry() = %v, %v; want %v", got, ok, want)
	}
	got, ok = l.NextExpiry(t0.Add(16 * time.Second))
	if want := t0.Add(20 * time.Second); !ok || !got.Equal(want) {
		t.Errorf("NextExpiry() after a's expiry = %v, %v; want %v", got, ok, want)
	}
}

// Silent names the members whose Leases have gone unrenewed for a while
// and have not expired yet, with the versions seen last; a renewal makes a
// member quiet for no time again, and an expired one is no longer silent
// but expired.
func TestSilent(t *testing.T) {
	l := NewLiveness(15 * time.Second)
	l.Observe("a", "1", 0, t0)
	l.Observe("b", "1", 0, t0.Add(4*time.Second))
	at := func(d time.Duration) map[string]string { return l.Silent(t0.Add(d), 7*time.Second) }
	for _, c := range []struct {
		at   time.Duration
		want map[string]string
	}{
		{6 * time.Second, map[string]string{}},
		{7 * time.Second, map[string]string{"a": "1"}},
		{12 * time.Second, map[string]string{"a": "1", "b": "1"}},
		{15 * time.Second, map[string]string{"b": "1"}}, // a expired
	} {
		if diff := cmp.Diff(c.want, at(c.at)); diff != "" {
			t.Errorf("Silent() at %s (-want +got):\n%s", c.at, diff)
		}
	}
	l.Observe("b", "2", 0, t0.Add(13*time.Second))
	if diff := cmp.Diff(map[string]string{}, l.Silent(t0.Add(16*time.Second), 7*time.Second)); diff != "" {
		t.Errorf("Silent() after b renewed (-want +got):\n%s", diff)
	}
}

// A new observer is in doubt, for a lease duration from its first
// listing, about members it has never seen: one whose Lease was deleted
// just before may still be working. Members it saw, or forgot (released,
// confirmed dead), are not in doubt; after the doubt, none is.
func TestDoubt(t *testing.T) {
	l := NewLiveness(15 * time.Second)
	if !l.Doubtful("unseen", t0) || !l.Doubting(t0) {
		t.Error("an observer that has not listed yet is not in doubt")
	}
	l.Listed(t0)
	l.Listed(t0.Add(10 * time.Second)) // only the first listing counts
	l.Observe("seen", "1", 0, t0)
	l.Observe("left", "1", 0, t0)
	l.Forget("left")
	at := t0.Add(14 * time.Second)
	for member, want := range map[string]bool{"unseen": true, "seen": false, "left": false} {
		if got := l.Doubtful(member, at); got != want {
			t.Errorf("Doubtful(%s) at 14 s = %v, want %v", member, got, want)
		}
	}
	if next, ok := l.NextExpiry(t0.Add(time.Second)); !ok || !next.Equal(t0.Add(15*time.Second)) {
		t.Errorf("NextExpiry() = %v, %v; want the doubt's end at 15 s", next, ok)
	}
	if l.Doubtful("unseen", t0.Add(15*time.Second)) || l.Doubting(t0.Add(15*time.Second)) {
		t.Error("still in doubt a lease duration after the first listing")
	}
}

// A member is live until its lease has run out since it was seen; one
// never seen or forgotten is not, and Unseen tells the never seen.
func TestIsLiveAndUnseen(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	l := NewLiveness(15 * time.Second)
	l.Observe("a", "1", 0, t0)
	l.Observe("b", "1", 0, t0)
	l.Forget("b")
	switch {
	case !l.IsLive("a", t0.Add(14*time.Second)):
		t.Error("a is not live within its lease")
	case l.IsLive("a", t0.Add(15*time.Second)):
		t.Error("a is live after its lease")
	case l.IsLive("b", t0), l.IsLive("c", t0):
		t.Error("a forgotten or never seen member is live")
	case l.Unseen("a"), l.Unseen("b"):
		t.Error("a seen or forgotten member is unseen")
	case !l.Unseen("c"):
		t.Error("a member never seen is not unseen")
	}
}
