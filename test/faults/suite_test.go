package faults

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kopf-go/kopf/test/faults/checker"
	"github.com/kopf-go/kopf/test/faults/faultlog"
)

// suite is one run: a ring, its objects and driver, the faults injected
// into it, and their log.
type suite struct {
	t    *testing.T
	dir  string
	log  *faultlog.Log
	ns   string
	ring *ring
	obs  *observer
	drv  *driver

	// began is the origin of the moments the suite prints.
	began time.Time

	stopDriver context.CancelFunc
	driverDone chan struct{}

	// rng chooses victims (nil: the first candidate by POD_ID), and
	// allowAssigner lets the assigner be one. lenient counts the steps
	// that find no victim in skips instead of failing the test.
	rng           *rand.Rand
	allowAssigner bool
	lenient       bool
	skips         []string
	// minRing is the fewest live members a Leave leaves (0: no limit).
	minRing int

	mu      sync.Mutex
	wg      sync.WaitGroup
	errs    []string
	foreign map[string]bool // the second rings' member names
	// victims is the last victim of each kind of fault, for a step that
	// hits it again (victimOf), and hitAgain the kinds whose victims a
	// later step hits again.
	victims  map[string]*member
	hitAgain map[string]bool
}

// newSuite prepares a ring named ring at the durations, with a
// namespace of its own for objects and Leases; echo hears every fault
// and process event as it is logged.
func newSuite(t *testing.T, ringName string, d timing, echo func(string)) *suite {
	t.Helper()
	dir := runDir(t)
	log, err := faultlog.Open(filepath.Join(dir, "faults.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = log.Close() })
	s := &suite{t: t, dir: dir, log: log, ns: createNamespace(t, "faults"), foreign: map[string]bool{}, victims: map[string]*member{}, began: time.Now()}
	if echo != nil {
		log.Echo = func(e faultlog.Entry) {
			r := checker.Report{Origin: s.began.UnixNano()}
			echo(r.Entry(e))
		}
	}
	createPeering(t, s.ns)
	s.ring = newRing(t, ringName, s.ns, s.ns, dir, log, d)
	s.obs = observe(t, s.ns, s.ring)
	return s
}

// start runs a member per slowness, creates the objects, waits until
// each runs its daemon somewhere, and starts the driver.
func (s *suite) start(slows []time.Duration, objects int, period time.Duration, seed uint64) {
	s.t.Helper()
	for i, slow := range slows {
		if _, err := s.ring.add(fmt.Sprintf("replica-%02d", i), slow, false); err != nil {
			s.t.Fatal(err)
		}
	}
	ctx := context.Background()
	if err := poll(ctx, time.Minute, func() bool {
		names, _ := s.ring.memberNames(ctx)
		return len(names) == len(slows) && s.ring.assigner(ctx) != ""
	}); err != nil {
		s.t.Fatalf("the ring did not form: %v", err)
	}
	s.drv = newDriver(s.ns, objects, period, seed)
	if err := s.drv.fill(ctx); err != nil {
		s.t.Fatal(err)
	}
	if err := poll(ctx, time.Minute, func() bool { return len(s.active()) >= objects }); err != nil {
		s.t.Fatalf("only %d of %d objects run their daemons", len(s.active()), objects)
	}
	driverCtx, cancel := context.WithCancel(ctx)
	s.stopDriver, s.driverDone = cancel, make(chan struct{})
	go func() {
		defer close(s.driverDone)
		s.drv.run(driverCtx)
	}()
	s.t.Cleanup(s.halt)
}

// active are the objects some member is active on now.
func (s *suite) active() map[string]bool {
	out := map[string]bool{}
	for _, m := range s.ring.all() {
		for _, o := range m.activeOn(time.Second) {
			out[o] = true
		}
	}
	return out
}

// inject runs a fault beside the others; its error fails the test at
// the end. The victim, if any, is released when the fault is over.
func (s *suite) inject(name string, victim *member, fn func(ctx context.Context) error) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if victim != nil {
			defer s.ring.release(victim)
		}
		if err := fn(context.Background()); err != nil {
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.lenient && errors.Is(err, errNotInjected) {
				s.skips = append(s.skips, fmt.Sprintf("%s: %v", name, err))
				return
			}
			s.errs = append(s.errs, fmt.Sprintf("%s: %v", name, err))
		}
	}()
}

// failed records a fault that could not even begin.
func (s *suite) failed(name string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.errs = append(s.errs, fmt.Sprintf("%s: %v", name, err))
}

// wait waits for every fault injected so far.
func (s *suite) wait() { s.wg.Wait() }

// settle waits, after the faults, until every fault's victim's objects
// have been taken over (up to the bound after the last fault's start),
// and at least a lease duration and more has passed for whatever the
// last fault set off to show.
func (s *suite) settle(bound func(kind string) time.Duration) {
	quiet := time.Now().Add(s.ring.timing.effective().lease + 5*time.Second)
	var last time.Time
	for _, e := range s.log.Entries() {
		if e.IsFault() {
			if end := time.Unix(0, e.Start).Add(bound(e.Kind)); end.After(last) {
				last = end
			}
		}
	}
	for time.Now().Before(last) {
		if time.Now().After(quiet) && s.takenOver() {
			break
		}
		time.Sleep(5 * time.Second)
	}
	sleep(context.Background(), time.Until(quiet))
}

// takenOver reports whether every fault whose victim was active on
// objects saw one of them taken over.
func (s *suite) takenOver() bool {
	for _, t := range s.check().Takeovers {
		if t.Objects > t.Gone+t.Later && t.Moved == 0 && takesOver(t.Fault.Kind) {
			return false
		}
	}
	return true
}

// takesOver tells the faults after which others must take the victim's
// objects over: all but those that move nothing (checker.MovesNothing).
// An owner label edited by hand must not move the object: the ring puts
// the label back (editLabel waits for that). A stalled watch must not
// either: the victim's Lease renews all along. The takeover bound is not
// theirs to meet: what moves a victim's object after them (a join's
// handover, a rollout) is timed by its own bound, if it has one.
func takesOver(kind string) bool { return !checker.MovesNothing(kind) }

// needsObjects tells the faults that test nothing unless their victim is
// active on objects. A stalled Lease watch tests the assigner's judgement
// of the others, whatever it runs itself.
func needsObjects(kind string) bool { return kind != faultlog.LeaseWatchStalled }

// halt stops the driver and every replica (SIGKILL: nothing of theirs
// runs after); it is also the test's cleanup, should it stop early.
func (s *suite) halt() {
	if s.stopDriver != nil {
		s.stopDriver()
		<-s.driverDone
		s.stopDriver = nil
	}
	for _, m := range s.ring.all() {
		m.Close()
	}
}

// finish halts everything and checks the records.
func (s *suite) finish() checker.Report {
	s.wait()
	s.halt()
	s.obs.stop()
	return s.check()
}

// judge fails the test for every breach of the guarantee: an overlap, a
// negative gap, a fault whose victim's objects nobody took over within
// the bound, a fault that could not be injected, an owner label written
// by a second ring. strict also fails faults whose victim was active on
// nothing, which tested nothing.
func (s *suite) judge(rep checker.Report, bound func(kind string) time.Duration, strict bool) {
	t := s.t
	t.Helper()
	for _, e := range s.errs {
		t.Errorf("a fault failed: %s", e)
	}
	if n := len(rep.Overlaps); n > 0 {
		t.Errorf("%d overlaps: two replicas were active on one object at once (see the report)", n)
	}
	for _, k := range rep.Kinds {
		if k.Negative > 0 {
			t.Errorf("%s: %d negative gaps between the old owner's last activity and the new owner's first", k.Kind, k.Negative)
		}
	}
	entries := s.log.Entries()
	for _, x := range rep.Takeovers {
		switch {
		case x.Objects == 0 && strict && needsObjects(x.Fault.Kind):
			t.Errorf("%s: the victim was active on no object; the fault tested nothing", rep.Entry(x.Fault))
		case x.Objects > x.Gone+x.Later && x.Moved == 0 && takesOver(x.Fault.Kind):
			t.Errorf("%s: none of the victim's %d objects was taken over", rep.Entry(x.Fault), x.Objects-x.Gone-x.Later)
		case x.Moved > 0 && takesOver(x.Fault.Kind) && x.First > takeoverDeadline(entries, x.Fault, bound(x.Fault.Kind)):
			t.Errorf("%s: taken over after %s, more than %s", rep.Entry(x.Fault), x.First, takeoverDeadline(entries, x.Fault, bound(x.Fault.Kind)))
		}
	}
	served := map[int]int{}
	for _, m := range s.ring.all() {
		for v, n := range m.l7.Served() {
			served[v] += n
		}
	}
	t.Logf("the replicas' L7 proxies served %d requests over HTTP/2 and %d over HTTP/1", served[2], served[1])
	if n := len(rep.LateWrites); n > 0 {
		t.Errorf("%d late writes: results that landed on versions granted to another member than their writer's (see the report)", n)
	}
	s.mu.Lock()
	foreign := s.obs.written(s.foreign)
	s.mu.Unlock()
	if len(foreign) > 0 {
		objects := map[string]bool{}
		var first []string
		for _, c := range foreign {
			if !objects[c.object] && len(first) < 10 {
				first = append(first, fmt.Sprintf("%s at %s (%s)", c.object, c.at.Format("15:04:05.000"), c.value))
			}
			objects[c.object] = true
		}
		t.Errorf("the first ring's owner label named a member of the second ring %d times, on %d objects; the first ones:\n  %s",
			len(foreign), len(objects), strings.Join(first, "\n  "))
	}
	if !strict {
		idle := 0
		for _, x := range rep.Takeovers {
			if x.Objects == 0 {
				idle++
			}
		}
		t.Logf("%d of %d faults with a victim found it active on no object (its objects had moved or gone already)", idle, len(rep.Takeovers))
	}
	if t.Failed() && *keep == "" {
		t.Log("to look at the records, the fault log and every replica's output afterwards, run again with -args -faults.keep=DIR")
	}
}

// takeoverBound is a generous bound of a fault's takeover: two lease
// durations and 30 s (the shutdown grace and more), and for a SIGTERM
// the kubelet's termination grace on top.
func takeoverBound(d timing) func(kind string) time.Duration {
	return func(kind string) time.Duration {
		b := 2*d.effective().lease + 30*time.Second
		if kind == faultlog.TermIgnored || kind == faultlog.Leave {
			b += terminationGrace
		}
		return b
	}
}

// takeoverDeadline is how long after its fault a takeover may take: the
// bound, or the bound after the start of a later fault that hit the
// ring's assigner before it ran out, since every takeover waits for the
// assigner to retire the victim, and a new assigner counts nobody dead
// before a lease duration after its first listing of the Leases (as
// client-go's leader election does); at most three bounds. The fault
// that the takeover judges does not count: its bound holds for a victim
// that is the assigner (docs/sharding.md, "The guarantee").
func takeoverDeadline(entries []faultlog.Entry, fault faultlog.Entry, bound time.Duration) time.Duration {
	deadline := bound
	entries = slices.Clone(entries)
	slices.SortFunc(entries, func(a, b faultlog.Entry) int { return cmp.Compare(a.Start, b.Start) })
	for _, e := range entries {
		after := time.Duration(e.Start - fault.Start)
		if e.ID != fault.ID && e.Assigner && e.IsFault() && after > 0 && after < deadline {
			deadline = after + bound
		}
	}
	return min(deadline, 3*bound)
}

// addForeign adds a second ring's member names.
func (s *suite) addForeign(names map[string]bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for n := range names {
		s.foreign[n] = true
	}
}

// alone injects one fault into the running ring, lets the ring settle,
// and judges the run strictly, at the durations d: the shape of a test of
// one fault kind.
func (s *suite) alone(d timing, p step) {
	s.follow(context.Background(), []step{p})
	s.wait()
	bound := takeoverBound(d)
	s.settle(bound)
	rep := s.finish()
	s.t.Logf("%s\n%s", s.drv.summary(), rep.Text())
	s.judge(rep, bound, true)
	s.t.Logf("%s took %s", s.t.Name(), time.Since(s.began).Round(time.Second))
}

// A takeover's bound runs again from a later fault on the ring's
// assigner (a new assigner's doubt), not from any other fault, and for
// three bounds at most.
func TestTakeoverDeadline(t *testing.T) {
	const bound = time.Minute
	start := time.Date(2026, 12, 6, 23, 23, 3, 0, time.UTC)
	victim := faultlog.Entry{ID: 1, Kind: faultlog.PartitionRefuse, Replica: "r1", Start: start.UnixNano(), Assigner: true}
	fault := func(id int, d time.Duration, assigner bool) faultlog.Entry {
		return faultlog.Entry{ID: id, Kind: faultlog.Kill, Replica: "r1", Start: start.Add(d).UnixNano(), Assigner: assigner}
	}
	tests := []struct {
		name    string
		entries []faultlog.Entry
		want    time.Duration
	}{
		{"the fault alone, its victim the assigner", []faultlog.Entry{victim}, bound},
		{"a later fault on another member", []faultlog.Entry{victim, fault(2, 20*time.Second, false)}, bound},
		{"a later fault on the assigner", []faultlog.Entry{victim, fault(2, 42*time.Second, true)}, 42*time.Second + bound},
		{"one before the fault", []faultlog.Entry{fault(2, -5*time.Second, true), victim}, bound},
		{"one after the bound ran out", []faultlog.Entry{victim, fault(2, 61*time.Second, true)}, bound},
		{"one that failed", []faultlog.Entry{victim, {ID: 2, Kind: faultlog.Kill, Start: start.Add(time.Second).UnixNano(), Assigner: true, Failed: "gone"}}, bound},
		{"one after another, in any order", []faultlog.Entry{fault(3, 100*time.Second, true), victim, fault(2, 50*time.Second, true)}, 100*time.Second + bound},
		{"at most three bounds", []faultlog.Entry{victim, fault(2, 50*time.Second, true), fault(3, 100*time.Second, true), fault(4, 150*time.Second, true)}, 3 * bound},
	}
	for _, tt := range tests {
		if got := takeoverDeadline(tt.entries, victim, bound); got != tt.want {
			t.Errorf("%s: takeoverDeadline() = %v, want %v", tt.name, got, tt.want)
		}
	}
}
