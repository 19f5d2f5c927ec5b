package faults

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/kopf-go/kopf/test/faults/activity"
	"github.com/kopf-go/kopf/test/faults/checker"
)

// recentTail is how much of a member's records file is read to see what
// it is active on now: a few seconds of its beats.
const recentTail = 256 << 10

// activeOn are the objects the member's current process was active on
// within the last window, as the checker counts a victim's objects.
func (m *member) activeOn(window time.Duration) []string {
	f, err := os.Open(m.records)
	if err != nil {
		return nil
	}
	defer func() { _ = f.Close() }()
	if st, err := f.Stat(); err == nil && st.Size() > recentTail {
		_, _ = f.Seek(st.Size()-recentTail, io.SeekStart)
	}
	data, _ := io.ReadAll(f)
	var records []activity.Record
	for _, line := range bytes.Split(data, []byte("\n")) {
		var r activity.Record
		if json.Unmarshal(line, &r) == nil {
			records = append(records, r)
		}
	}
	return checker.ActiveObjects(records, m.Actor(), time.Now(), window)
}

// pickWindow is how recent a candidate's activity must be: well inside
// the checker's LookBack, which judges whether the fault found the
// victim active, since the fault begins a moment after the pick (a
// candidate last active a second before the pick was, at the fault's
// start, no longer active in the checker's eyes, and the fault "tested
// nothing"). Every running daemon beats every 50 ms.
const pickWindow = checker.LookBack / 2

// pick chooses a victim and marks it busy until release: a member that
// is up, under no other fault, not the assigner (whose faults would
// test its re-election too, which TestChaos does), not the one that
// ignores its stop, active on an object now, and, if possible, of the
// wanted slowness (any if slow < 0). rng chooses among the candidates;
// nil takes the one active on the most objects, the first by POD_ID
// among equals: a victim that a later step hits again (victimOf) must
// still be active on something then, after the churn deleted objects.
func (r *ring) pick(ctx context.Context, slow time.Duration, rng *rand.Rand, allowAssigner bool) (*member, error) {
	assigner := r.assigner(ctx)
	var exact, other []*member
	active := map[*member]int{}
	for _, m := range r.all() {
		r.mu.Lock()
		busy := r.busy[m.PodID()]
		r.mu.Unlock()
		if busy || !m.Up() || m.ignoreStop || (!allowAssigner && m.PodID() == assigner) {
			continue
		}
		if active[m] = len(m.activeOn(pickWindow)); active[m] == 0 {
			continue
		}
		if slow < 0 || m.slow == slow {
			exact = append(exact, m)
		} else {
			other = append(other, m)
		}
	}
	candidates := exact
	if len(candidates) == 0 {
		candidates = other
	}
	if len(candidates) == 0 {
		return nil, fmt.Errorf("no member can be a victim now (slow %s)", slow)
	}
	slices.SortFunc(candidates, func(a, b *member) int { return strings.Compare(a.PodID(), b.PodID()) })
	var m *member
	if rng != nil {
		m = candidates[rng.IntN(len(candidates))]
	} else {
		m = slices.MinFunc(candidates, func(a, b *member) int { return cmp.Compare(active[b], active[a]) })
	}
	r.mu.Lock()
	r.busy[m.PodID()] = true
	r.mu.Unlock()
	return m, nil
}

// pickAgain makes an earlier victim the victim of another fault, if it
// is up and no fault holds it now.
func (r *ring) pickAgain(m *member) error {
	up := m.Up()
	r.mu.Lock()
	defer r.mu.Unlock()
	if busy := r.busy[m.PodID()]; busy || !up {
		return fmt.Errorf("%s is not free to be a victim again (busy %t, up %t)", m.PodID(), busy, up)
	}
	r.busy[m.PodID()] = true
	return nil
}

// release lets the member be a victim again.
func (r *ring) release(m *member) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.busy, m.PodID())
}

// pickOther chooses a live member other than m, for a label edit's
// target; it need not be idle.
func (r *ring) pickOther(ctx context.Context, m *member, rng *rand.Rand) (*member, error) {
	names, err := r.memberNames(ctx)
	if err != nil {
		return nil, err
	}
	// Members under no fault first: a target that a fault takes down
	// at once tells little about the edit.
	var idle, busy []*member
	for _, o := range r.all() {
		if o == m || !o.Up() || o.ignoreStop {
			continue
		}
		for _, podID := range names {
			if podID != o.PodID() {
				continue
			}
			r.mu.Lock()
			if r.busy[podID] {
				busy = append(busy, o)
			} else {
				idle = append(idle, o)
			}
			r.mu.Unlock()
		}
	}
	out := idle
	if len(out) == 0 {
		out = busy
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no live member besides %s", m.PodID())
	}
	slices.SortFunc(out, func(a, b *member) int { return strings.Compare(a.PodID(), b.PodID()) })
	if rng != nil {
		return out[rng.IntN(len(out))], nil
	}
	return out[0], nil
}
