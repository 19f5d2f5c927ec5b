package faults

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/kopf-go/kopf/test/faults/faultlog"
)

// ringRenamed is the fault of a rolling update that renames the ring
// (docs/sharding.md, "Renaming a ring, or moving its Leases"): every
// replica, one at a time, is replaced by a replica with another
// --shard-ring, and then back. The two rings never handle one object at
// once, and the renamed ring takes the objects as the old members go.
// It is not in faultlog.Kinds: it restarts every replica twice, too long
// for TestFaults; TestChaos adds it (chaosKinds).
const ringRenamed = "ring-renamed"

// renameRing rolls the ring over to a ring of another name and back, as
// two rolling updates with a surge of one: for each replica, a new one
// (a new POD_ID, as a Deployment's new pod) of the other name joins, and
// then the old one gets SIGTERM and exits (SIGKILL after the termination
// grace). Members under another fault, and those that ignore their stop,
// are left in the ring and keep its name. The renamed ring's replicas are
// --standalone: to peering they would be another operator of the same
// priority, and the two rings would freeze each other for the rollout,
// which is safe but tests nothing of the rings. The fault has no victim:
// the checker's overlaps are what judges it.
func (s *suite) renameRing(ctx context.Context) error {
	r := s.ring
	r.mu.Lock()
	if r.renaming {
		r.mu.Unlock()
		// One rollout at a time, as a Deployment rolls out one template
		// at a time: two renames at once make three rings, each waiting
		// for the others' members, and the step's bound is one rename's.
		return notInjected(errors.New("another rename of the ring is under way"))
	}
	r.renaming = true
	defer func() {
		r.mu.Lock()
		r.renaming = false
		r.mu.Unlock()
	}()
	r.renames++
	nth := r.renames
	r.mu.Unlock()
	to := fmt.Sprintf("%s-renamed-%d", r.name, nth)
	renamed := newRing(r.t, to, r.ns, r.leaseNS, r.dir, r.log, r.timing)
	renamed.extra = []string{"--standalone"}
	r.mu.Lock()
	r.renamed = append(r.renamed, renamed)
	rings := append([]*ring{r}, r.renamed...) // every ring that may hold objects
	r.mu.Unlock()

	// Every member that is up and under no fault is this fault's: no
	// other fault picks it meanwhile.
	var old []*member
	r.mu.Lock()
	for _, m := range r.members {
		if m.Up() && !m.ignoreStop && !r.busy[m.PodID()] {
			r.busy[m.PodID()] = true
			old = append(old, m)
		}
	}
	r.mu.Unlock()
	defer func() {
		for _, m := range old {
			r.release(m)
		}
	}()
	id := r.log.Begin(faultlog.Entry{Kind: ringRenamed, Note: fmt.Sprintf("%d replicas of %s to %s and back", len(old), r.name, to)})
	var back []*member
	for i, m := range old {
		n, err := replace(ctx, renamed, fmt.Sprintf("renamed-%d-%d", nth, i), m, rings...)
		if err != nil {
			r.log.End(id, err.Error())
			return err
		}
		back = append(back, n)
	}
	for i, m := range back {
		n, err := replace(ctx, r, fmt.Sprintf("back-%d-%d", nth, i), m, rings...)
		if err != nil {
			r.log.End(id, err.Error())
			return err
		}
		r.mu.Lock()
		r.busy[n.PodID()] = true // released with the others, at the end
		r.mu.Unlock()
		old = append(old, n)
	}
	r.log.End(id, fmt.Sprintf("renamed to %s and back", to))
	return nil
}

// replace starts a member podID of the ring into with m's slowness, waits
// until it has joined, and then stops m as a rolling
// update does: SIGTERM, and SIGKILL after the termination grace. Its exit
// is in the fault log as a process's; it is no fault of its own.
func replace(ctx context.Context, into *ring, podID string, m *member, rings ...*ring) (*member, error) {
	n, err := into.add(podID, m.slow, false)
	if err != nil {
		return nil, err
	}
	if err := poll(ctx, time.Minute, func() bool { _, err := into.memberName(ctx, n); return err == nil }); err != nil {
		return nil, fmt.Errorf("%s did not join the ring %s: %w", podID, into.name, err)
	}
	held := m.activeOn(pickWindow)
	if _, exited, err := m.Term(); err == nil {
		grace := time.NewTimer(terminationGrace)
		defer grace.Stop()
		select {
		case <-exited:
		case <-grace.C:
			_, _ = m.Kill()
		case <-ctx.Done():
			_, _ = m.Kill()
		}
	}
	// As a rollout waits for the new pod to be ready, the next step waits
	// until what the stopped member held runs elsewhere: otherwise the
	// rollout outruns the takeover, and the renamed ring's members hold
	// nothing when their turn to go comes. Each object counts once it has
	// run elsewhere since the stop: other faults may stop its new owner
	// afterwards, which is theirs to judge.
	stopped := time.Now()
	bound := 2*into.timing.effective().lease + 30*time.Second
	ran := map[string]bool{}
	for !ranElsewhere(ctx, held, ran, m, rings...) {
		if time.Now().After(renameDeadline(into.log.Entries(), stopped, bound)) {
			var waiting []string
			for _, o := range held {
				if !ran[o] {
					waiting = append(waiting, o)
				}
			}
			return nil, fmt.Errorf("the objects of %s did not run elsewhere after its stop: timed out, %v waiting", m.PodID(), waiting)
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		sleep(ctx, 100*time.Millisecond)
	}
	return n, nil
}

// renameDeadline is when a rename step's wait for a stopped member's
// objects runs out: bound after the stop, or after the start of a later
// fault of another kind with a victim in the ring, since its victim may
// be the member that took the objects over, whose lease they then wait
// for; at most three bounds after the stop. Faults come every few
// seconds in TestChaos, and a ring whose few members are hit one after
// another (a replica killed five times within a minute, say) delays a
// takeover by lease after lease: the checker judges those faults'
// takeovers; this wait only paces the rollout.
func renameDeadline(entries []faultlog.Entry, stopped time.Time, bound time.Duration) time.Time {
	deadline := stopped.Add(bound)
	entries = slices.Clone(entries)
	slices.SortFunc(entries, func(a, b faultlog.Entry) int { return cmp.Compare(a.Start, b.Start) })
	for _, e := range entries {
		start := time.Unix(0, e.Start)
		if e.IsFault() && e.Kind != ringRenamed && e.Replica != "" && start.After(stopped) && start.Before(deadline) {
			deadline = start.Add(bound)
		}
	}
	if last := stopped.Add(3 * bound); deadline.After(last) {
		return last
	}
	return deadline
}

// ranElsewhere records in ran the objects of held that are active now on
// an up member of the rings other than gone, or no longer exist, and
// tells whether every object of held is in ran.
func ranElsewhere(ctx context.Context, held []string, ran map[string]bool, gone *member, rings ...*ring) bool {
	objs, err := rings[0].objects(ctx)
	if err != nil {
		return false
	}
	exists := map[string]bool{}
	for _, o := range objs {
		exists[o.GetNamespace()+"/"+o.GetName()] = true
	}
	for _, r := range rings {
		for _, m := range r.all() {
			if m != gone && m.Up() {
				for _, o := range m.activeOn(pickWindow) {
					ran[o] = true
				}
			}
		}
	}
	all := true
	for _, o := range held {
		if !exists[o] {
			ran[o] = true
		}
		all = all && ran[o]
	}
	return all
}

// begun tells whether a fault of the kind has begun.
func (s *suite) begun(kind string) bool {
	for _, e := range s.log.Entries() {
		if e.Kind == kind {
			return true
		}
	}
	return false
}

// A rename step waits bound after the stop, or after the start of a
// later fault with a victim that began while it waited, up to three
// bounds; lifecycle events, failed faults, faults without a victim and
// faults that began before the stop or after the wait ran out do not
// extend it.
func TestRenameDeadline(t *testing.T) {
	stopped := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	const bound = time.Minute
	at := func(d time.Duration) int64 { return stopped.Add(d).UnixNano() }
	fault := func(kind string, d time.Duration, victim string) faultlog.Entry {
		return faultlog.Entry{Kind: kind, Start: at(d), Replica: victim}
	}
	tests := []struct {
		name    string
		entries []faultlog.Entry
		want    time.Duration
	}{
		{"no other fault", nil, bound},
		{"a fault before the stop", []faultlog.Entry{fault(faultlog.Kill, -time.Second, "r1")}, bound},
		{"lifecycle events and faults without a victim", []faultlog.Entry{
			fault(faultlog.ProcessExit, 10*time.Second, "r1"), fault(faultlog.ProcessStart, 20*time.Second, "r1"),
			fault(faultlog.SecondRing, 30*time.Second, ""), fault(ringRenamed, 40*time.Second, "r2"),
			{Kind: faultlog.Kill, Start: at(50 * time.Second), Replica: "r3", Failed: "gone"},
		}, bound},
		{"a fault while it waits", []faultlog.Entry{fault(faultlog.Kill, 20*time.Second, "r1")}, 20*time.Second + bound},
		{"faults one after another, in any order", []faultlog.Entry{
			fault(faultlog.Pause, 100*time.Second, "r2"), fault(faultlog.Kill, 50*time.Second, "r1"),
		}, 100*time.Second + bound},
		{"a fault after the wait ran out", []faultlog.Entry{fault(faultlog.Kill, 61*time.Second, "r1")}, bound},
		{"at most three bounds", []faultlog.Entry{
			fault(faultlog.Kill, 50*time.Second, "r1"), fault(faultlog.Pause, 100*time.Second, "r2"),
			fault(faultlog.Kill, 150*time.Second, "r3"),
		}, 3 * bound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := renameDeadline(tt.entries, stopped, bound); !got.Equal(stopped.Add(tt.want)) {
				t.Errorf("renameDeadline() = stop + %v, want stop + %v", got.Sub(stopped), tt.want)
			}
		})
	}
}
