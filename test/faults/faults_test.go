package faults

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kopf-go/kopf/test/faults/faultlog"
	"github.com/kopf-go/kopf/test/faults/proxy"
)

// TestFaults injects every fault once, at the library's default
// durations (15 s lease, 10 s renew deadline, 5 s renew period), into a
// ring of twelve replicas whose handlers and daemons honour their
// cancellation at once, 2 s late or 4 s late (within the 5 s margin),
// while a driver changes objects all along. Faults that do not depend
// on each other hit different replicas at once, in two waves, to keep
// the run short. It fails on any moment at which two replicas were
// active on one object, on any negative gap between an old owner's last
// activity and a new owner's first, and on a fault whose victim's
// objects nobody took over within a generous bound.
func TestFaults(t *testing.T) {
	began := time.Now()
	s := newSuite(t, "faults", defaults, func(line string) { t.Log(line) })
	var slows []time.Duration
	for i := range 12 {
		slows = append(slows, time.Duration(i%3)*2*time.Second)
	}
	s.start(slows, 30, 500*time.Millisecond, 1)
	t.Logf("the ring of %d replicas runs its %d objects after %s", len(slows), 30, time.Since(began).Round(time.Second))

	ctx := context.Background()
	d := defaults.effective()
	hold := d.lease + 5*time.Second // every cut-off outlasts a lease

	// Wave 1: cut-offs, a pause, a Lease deleted and a label edited.
	s.hit(faultlog.PartitionRefuse, 2*time.Second, func(m *member) error { return s.ring.partition(ctx, m, proxy.Refuse, hold) })
	s.hit(faultlog.PartitionHang, 4*time.Second, func(m *member) error { return s.ring.partition(ctx, m, proxy.Hang, hold) })
	s.hit(faultlog.Pause, 4*time.Second, func(m *member) error { return s.ring.pause(ctx, m, hold) })
	s.hit(faultlog.LeaseDeleted, 0, func(m *member) error { return s.ring.deleteLease(ctx, m) })
	s.editLabel(ctx, 2*time.Second)
	stubborn, err := s.ring.add("replica-stubborn", 0, true)
	if err != nil {
		t.Fatal(err)
	}

	// Wave 2, while wave 1's victims come back: kills with restarts at
	// moments around the lease's expiry, churn, the stubborn replica's
	// SIGTERM, and a second ring.
	sleep(ctx, hold+5*time.Second)
	s.hit(faultlog.Kill, 0, func(m *member) error {
		return s.ring.kill(ctx, m, faultlog.Kill, func(killed, _ time.Time) time.Time { return killed.Add(hold) })
	})
	for _, r := range []struct {
		kind   string
		slow   time.Duration
		offset time.Duration // from the lease's expiry
	}{
		{faultlog.RestartAtOnce, 2 * time.Second, 0},
		{faultlog.RestartBefore, 4 * time.Second, -time.Second},
		{faultlog.RestartAt, 0, 0},
		{faultlog.RestartAfter, 2 * time.Second, time.Second},
	} {
		s.hit(r.kind, r.slow, func(m *member) error {
			return s.ring.kill(ctx, m, r.kind, func(killed, expiry time.Time) time.Time {
				if r.kind == faultlog.RestartAtOnce {
					return killed
				}
				return expiry.Add(r.offset)
			})
		})
	}
	s.hit(faultlog.Leave, -1, func(m *member) error { return s.ring.terminate(ctx, m, faultlog.Leave) })
	s.inject(faultlog.Join, nil, func(ctx context.Context) error {
		_, err := s.ring.join(ctx, "replica-joined", 4*time.Second)
		return err
	})
	s.inject(faultlog.TermIgnored, nil, func(ctx context.Context) error {
		if err := poll(ctx, time.Minute, func() bool { return len(stubborn.activeOn(time.Second)) > 0 }); err != nil {
			return fmt.Errorf("the stubborn replica got no objects: %w", err)
		}
		return s.ring.terminate(ctx, stubborn, faultlog.TermIgnored)
	})
	s.inject(faultlog.SecondRing, nil, func(ctx context.Context) error {
		names, err := s.ring.secondRing(ctx, createNamespace(t, "second"), 2, hold+10*time.Second)
		s.addForeign(names)
		return err
	})

	s.wait()
	bound := takeoverBound(defaults)
	s.settle(bound)
	rep := s.finish()
	t.Logf("%s\n%s", s.drv.summary(), rep.Text())
	s.judge(rep, bound, true)
	for _, k := range faultlog.Kinds {
		if !strings.Contains(rep.Markdown(), "| "+k+" |") {
			t.Errorf("no %s fault was injected", k)
		}
	}
	t.Logf("TestFaults took %s", time.Since(began).Round(time.Second))
}
