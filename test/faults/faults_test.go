package faults

import (
	"context"
	"testing"
	"time"

	"github.com/kopf-go/kopf/pkg/kopftest"
	"github.com/kopf-go/kopf/test/faults/checker"
	"github.com/kopf-go/kopf/test/faults/faultlog"
)

// TestFaults injects every fault once, at the library's default
// durations (15 s lease, 10 s renew deadline, 5 s renew period), into a
// ring of twelve replicas whose handlers and daemons honour their
// cancellation at once, 2 s late or 4 s late (within the 5 s margin),
// while a driver changes objects all along. Faults that do not depend
// on each other hit different replicas at once, in two waves, to keep
// the run short (the nemeses of the L7 proxy among them: writes held,
// a share's watch and the assigner's watch of Leases stalled); then,
// alone, a join during which objects of a kind without a finalizer of
// its own are deleted and created anew under their names while their
// old owners work on them; the second ring comes last and alone, since
// it touches every object if it goes wrong. One process takes two faults, a label
// edit and then a kill, as random runs do: the kill's move must not be
// charged to the edit. It fails on any moment at which two
// replicas were active on one object, on any result that landed on a
// version granted to another member than its writer's (a late write), on
// any negative gap between an old owner's last activity and a new
// owner's first, and on a fault whose victim's objects nobody took over
// within a generous bound.
func TestFaults(t *testing.T) {
	kopftest.NoLeaks(t) // every goroutine of the suite has ended when the test does
	s := newSuite(t, "faults", defaults, func(line string) { t.Log(line) })
	var slows []time.Duration
	for i := range 12 {
		slows = append(slows, time.Duration(i%3)*2*time.Second)
	}
	s.start(slows, 30, 500*time.Millisecond, 1)
	t.Logf("the ring of %d replicas runs its 30 objects after %s", len(slows), time.Since(s.began).Round(time.Second))

	ctx := context.Background()
	d := defaults.effective()
	hold := d.lease + 5*time.Second // every cut-off outlasts a lease
	wave2 := hold + 5*time.Second   // while wave 1's victims come back
	steps := []step{
		// Wave 1: cut-offs, a pause, a Lease deleted, a label edited,
		// and the stubborn replica that wave 2 stops.
		{kind: faultlog.PartitionRefuse, slow: 2 * time.Second, hold: hold},
		{kind: faultlog.PartitionHang, slow: 4 * time.Second, hold: hold},
		{kind: faultlog.Pause, slow: 4 * time.Second, hold: hold},
		// Through the L7 proxy: writes held past the move, a share's
		// watch stalled. (Before the faults that release their victim at
		// once, which would be picked again while they go down.)
		{kind: faultlog.WriteDelayed, slow: 2 * time.Second, hold: hold},
		{kind: faultlog.ShareWatchStalled, slow: 0, hold: hold},
		{kind: faultlog.LeaseDeleted, slow: 0},
		{kind: faultlog.LabelEdited, slow: 2 * time.Second},
		{kind: faultlog.TermIgnored, slow: -1, hold: wave2, podID: "replica-stubborn"},
		// Wave 2: kills with restarts at moments around the lease's
		// expiry, and churn. The first kill hits the label edit's victim
		// again: the edited object moves with the kill, and the move is
		// the kill's, not the edit's (two faults on one process).
		{at: wave2, kind: faultlog.RestartAfter, slow: -1, offset: time.Second, victimOf: faultlog.LabelEdited},
		{at: wave2, kind: faultlog.Kill, slow: 0, hold: hold},
		{at: wave2, kind: faultlog.RestartAtOnce, slow: 2 * time.Second},
		{at: wave2, kind: faultlog.RestartBefore, slow: 4 * time.Second, offset: -time.Second},
		{at: wave2, kind: faultlog.RestartAt, slow: 0},
		{at: wave2, kind: faultlog.Leave, slow: -1},
		{at: wave2, kind: faultlog.Join, slow: 4 * time.Second, podID: "replica-joined"},
		// The assigner's watch of Leases stalled while members die,
		// restart, join and leave.
		{at: wave2, kind: faultlog.LeaseWatchStalled, slow: -1, hold: hold},
		// Alone: a join whose buckets carry names deleted and created
		// anew while their old owners work on them.
		{barrier: true, kind: faultlog.NameReused, slow: -1, podID: "replica-reuser"},
		// Last, alone: a second ring of the same name.
		{barrier: true, kind: faultlog.SecondRing, slow: -1, hold: hold},
	}
	s.follow(ctx, steps)
	s.wait()

	bound := takeoverBound(defaults)
	s.settle(bound)
	rep := s.finish()
	t.Logf("%s\n%s", s.drv.summary(), rep.Text())
	s.judge(rep, bound, true)
	s.judgeOverlap(rep, faultlog.LabelEdited, faultlog.RestartAfter)
	if missing := s.missing(); len(missing) > 0 {
		t.Errorf("no fault of these kinds was injected: %v", missing)
	}
	t.Logf("TestFaults took %s", time.Since(s.began).Round(time.Second))
}

// judgeOverlap checks the two faults that hit one process: that they
// did, and that no move after the second is charged to the first (a
// label edit is held to moving nothing; the kill after it moves it all).
func (s *suite) judgeOverlap(rep checker.Report, first, second string) {
	t := s.t
	t.Helper()
	var a, b *checker.Takeover
	for i, x := range rep.Takeovers {
		switch {
		case x.Fault.Kind == first && a == nil:
			a = &rep.Takeovers[i]
		case x.Fault.Kind == second && b == nil:
			b = &rep.Takeovers[i]
		}
	}
	if a == nil || b == nil {
		t.Errorf("the overlap of %s and %s did not happen: a victim for each? %t, %t", first, second, a != nil, b != nil)
		return
	}
	if a.Fault.Actor != b.Fault.Actor {
		t.Errorf("the overlap of %s and %s hit two processes: %s and %s", first, second, a.Fault.Actor, b.Fault.Actor)
		return
	}
	if a.Moved > 0 && a.Fault.Start+int64(a.All) >= b.Fault.Start {
		t.Errorf("%s: a move %s after it, past the later %s, is charged to it", rep.Entry(a.Fault), a.All, second)
	}
	t.Logf("%s and then %s on %s: of the first's %d objects, %d moved before the second, %d after it (the second's), %d were deleted",
		first, second, a.Fault.Actor, a.Objects, a.Moved, a.Later, a.Gone)
}

// TestNameReused injects the name-reused fault alone, into a small ring
// at the library's default durations: a replica joins while
// incarnations' create handlers run, and the names whose buckets move to
// it are deleted and created anew at once. It fails on any overlap (two
// incarnations of one name worked on at once) and on a fault that tested
// nothing (no predecessor still worked on at its deletion).
func TestNameReused(t *testing.T) {
	kopftest.NoLeaks(t)
	s := newSuite(t, "names", defaults, func(line string) { t.Log(line) })
	s.start([]time.Duration{0, 2 * time.Second, 4 * time.Second, 0}, 8, time.Second, 1)
	s.alone(defaults, step{kind: faultlog.NameReused, slow: -1, podID: "replica-reuser"})
}
