package faults

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kopf-go/kopf/internal/sharding"
	"github.com/kopf-go/kopf/test/faults/faultlog"
	"github.com/kopf-go/kopf/test/faults/proxy"
)

// step is one fault of a schedule.
type step struct {
	// at is when it begins, after the schedule's start; with barrier, it
	// begins only once every earlier fault is over, too.
	at      time.Duration
	barrier bool
	kind    string
	// slow is the slowness wanted of the victim (negative: any).
	slow time.Duration
	// hold is how long a cut-off, a pause or a kill lasts, how long a
	// second ring runs, or how long a stubborn replica runs before its
	// SIGTERM.
	hold time.Duration
	// offset is when a kill's restart comes, from the lease's expiry.
	offset time.Duration
	// podID names the replica that a join, a stubborn replica or a
	// reuse of names adds.
	podID string
	// victimOf hits the victim of the earlier step of this kind again
	// (slow is then ignored): two faults on one process, where the
	// checker must tell whose move a move is.
	victimOf string
}

func (p step) String() string {
	s := fmt.Sprintf("+%s %s", p.at.Round(100*time.Millisecond), p.kind)
	if p.slow >= 0 {
		s += " slow " + p.slow.String()
	}
	if p.hold > 0 {
		s += " for " + p.hold.Round(100*time.Millisecond).String()
	}
	if p.offset != 0 {
		s += fmt.Sprintf(" restart at expiry%+.1fs", p.offset.Seconds())
	}
	if p.victimOf != "" {
		s += " on " + p.victimOf + "'s victim"
	}
	return s
}

// follow injects the steps at their moments; it returns once the last
// has begun (the faults go on: wait waits for them).
func (s *suite) follow(ctx context.Context, steps []step) {
	s.mu.Lock()
	s.hitAgain = map[string]bool{}
	for _, p := range steps {
		if p.victimOf != "" {
			s.hitAgain[p.victimOf] = true
		}
	}
	s.mu.Unlock()
	start := time.Now()
	for _, p := range steps {
		if p.barrier {
			s.wait()
		}
		sleep(ctx, time.Until(start.Add(p.at)))
		if ctx.Err() != nil {
			return
		}
		s.step(ctx, p)
	}
}

// step injects one fault, choosing its victim now.
func (s *suite) step(ctx context.Context, p step) {
	r := s.ring
	switch p.kind {
	case faultlog.PartitionRefuse, faultlog.PartitionHang:
		mode := proxy.Refuse
		if p.kind == faultlog.PartitionHang {
			mode = proxy.Hang
		}
		s.hit(ctx, p, func(m *member) error { return r.partition(ctx, m, mode, p.hold) })
	case faultlog.Pause:
		s.hit(ctx, p, func(m *member) error { return r.pause(ctx, m, p.hold) })
	case faultlog.Kill:
		s.hit(ctx, p, func(m *member) error {
			return r.kill(ctx, m, p.kind, func(killed, _ time.Time) time.Time { return killed.Add(p.hold) })
		})
	case faultlog.RestartAtOnce:
		s.hit(ctx, p, func(m *member) error {
			return r.kill(ctx, m, p.kind, func(killed, _ time.Time) time.Time { return killed })
		})
	case faultlog.RestartBefore, faultlog.RestartAt, faultlog.RestartAfter:
		s.hit(ctx, p, func(m *member) error {
			return r.kill(ctx, m, p.kind, func(_, expiry time.Time) time.Time { return expiry.Add(p.offset) })
		})
	case faultlog.LeaseDeleted:
		s.hit(ctx, p, func(m *member) error { return r.deleteLease(ctx, m) })
	case faultlog.Leave:
		if n := s.ring.live(); n <= s.minRing {
			s.skipped(p, fmt.Errorf("the ring has only %d live members", n))
			return
		}
		s.hit(ctx, p, func(m *member) error { return r.terminate(ctx, m, faultlog.Leave) })
	case faultlog.LabelEdited:
		s.editLabel(ctx, p)
	case faultlog.Join:
		s.inject(p.kind, nil, func(ctx context.Context) error {
			_, err := r.join(ctx, p.podID, p.slow)
			return err
		})
	case faultlog.NameReused:
		s.inject(p.kind, nil, func(ctx context.Context) error { return r.nameReused(ctx, p.podID, p.slow) })
	case faultlog.TermIgnored:
		s.inject(p.kind, nil, func(ctx context.Context) error { return s.stubborn(ctx, p) })
	case faultlog.SecondRing:
		s.inject(p.kind, nil, func(ctx context.Context) error {
			names, err := r.secondRing(ctx, createNamespace(s.t, "second"), 2, p.hold)
			s.addForeign(names)
			return err
		})
	case ringRenamed:
		s.inject(p.kind, nil, s.renameRing)
	case faultlog.LeaseWatchStalled:
		// The assigner is the victim whose view of the Leases matters:
		// it judges the others' liveness by them.
		m, err := s.ring.pickAssigner(ctx)
		if err != nil && s.rng != nil {
			s.hit(ctx, p, func(m *member) error {
				return r.stallWatch(ctx, m, p.kind, leaseWatches, p.hold, false)
			})
			return
		}
		if err != nil {
			s.skipped(p, err)
			return
		}
		s.inject(p.kind, m, func(context.Context) error { return r.stallWatch(ctx, m, p.kind, leaseWatches, p.hold, false) })
	case faultlog.ShareWatchStalled:
		s.hit(ctx, p, func(m *member) error { return r.stallWatch(ctx, m, p.kind, shareWatches, p.hold, true) })
	case faultlog.WriteDelayed:
		s.hit(ctx, p, func(m *member) error { return r.writeDelayed(ctx, m, p.hold) })
	default:
		s.failed(p.kind, fmt.Errorf("no such fault"))
	}
}

// hit picks a victim for the step and injects the fault into it.
func (s *suite) hit(ctx context.Context, p step, fn func(m *member) error) {
	m, err := s.victim(ctx, p)
	if err != nil {
		s.skipped(p, err)
		return
	}
	s.inject(p.kind, m, func(context.Context) error { return fn(m) })
}

// victim picks the step's victim and marks it busy: the earlier victim
// that the step names, or one of the slowness it asks for. A victim that
// a later step hits again keeps the objects it is active on now: the
// driver spares them, so that the later fault finds them, unless the
// ring moved them meanwhile (then keepActive gives it another).
func (s *suite) victim(ctx context.Context, p step) (*member, error) {
	if p.victimOf == "" {
		m, err := s.ring.pick(ctx, p.slow, s.rng, s.allowAssigner)
		if err == nil {
			s.mu.Lock()
			s.victims[p.kind] = m
			again := s.hitAgain[p.kind]
			s.mu.Unlock()
			if again {
				s.drv.spare(m.activeOn(pickWindow))
			}
		}
		return m, err
	}
	s.mu.Lock()
	m := s.victims[p.victimOf]
	s.mu.Unlock()
	if m == nil {
		return nil, fmt.Errorf("no %s fault has had a victim", p.victimOf)
	}
	if err := s.ring.pickAgain(m); err != nil {
		return nil, err
	}
	if err := s.keepActive(ctx, m); err != nil {
		s.ring.release(m)
		return nil, err
	}
	return m, nil
}

// keepActiveBound bounds the wait until a victim runs the object created
// for it.
const keepActiveBound = 30 * time.Second

// keepActive makes sure that a victim hit again is active on an object:
// its first fault's objects may have moved to a member that joined since
// (a restarted process joins under a new name, and takes buckets from
// every member). If it is active on none, the driver creates one in a
// bucket that the ring's epoch gives the victim, and the suite waits
// until the victim runs it.
func (s *suite) keepActive(ctx context.Context, m *member) error {
	if len(m.activeOn(pickWindow)) > 0 {
		return nil
	}
	name, err := s.ring.memberName(ctx, m)
	if err != nil {
		return err
	}
	members := s.ring.epochMembers(ctx)
	if !slices.Contains(members, name) {
		return fmt.Errorf("%s (%s) is not in the ring's epoch %v", m.PodID(), name, members)
	}
	created, err := s.drv.createWhere(ctx, func(n string) bool {
		return sharding.Owner(sharding.ObjectKey(s.ns, n), members) == name
	})
	if err != nil {
		return err
	}
	object := s.ns + "/" + created
	s.drv.spare([]string{object})
	if err := poll(ctx, keepActiveBound, func() bool { return slices.Contains(m.activeOn(pickWindow), object) }); err != nil {
		return fmt.Errorf("%s was active on nothing, and did not run %s, created in its bucket, within %s", m.PodID(), created, keepActiveBound)
	}
	s.t.Logf("%s was active on nothing when hit again: it runs %s, created in its bucket", m.PodID(), created)
	return nil
}

// editLabel moves an object of a victim to another live member by hand.
func (s *suite) editLabel(ctx context.Context, p step) {
	owner, err := s.victim(ctx, p)
	if err != nil {
		s.skipped(p, err)
		return
	}
	// The edit patches a KopfExample: the victim's incarnations (the
	// name-reused fault's kind) are left out.
	objects := slices.DeleteFunc(owner.activeOn(time.Second), func(o string) bool {
		_, name, _ := strings.Cut(o, "/")
		return isIncarnation(name)
	})
	to, err := s.ring.pickOther(ctx, owner, s.rng)
	if err != nil || len(objects) == 0 {
		s.ring.release(owner)
		s.skipped(p, fmt.Errorf("no object or no other member: %v", err))
		return
	}
	object := objects[0]
	if s.rng != nil {
		object = objects[s.rng.IntN(len(objects))]
	}
	_, name, _ := strings.Cut(object, "/")
	s.inject(p.kind, owner, func(ctx context.Context) error { return s.ring.editLabel(ctx, owner, name, to) })
}

// stubborn adds a replica whose daemons ignore their stop, lets it run
// for the step's hold and until it is active on an object, and sends it
// SIGTERM.
func (s *suite) stubborn(ctx context.Context, p step) error {
	m, err := s.ring.add(p.podID, 0, true)
	if err != nil {
		return err
	}
	sleep(ctx, p.hold)
	if err := poll(ctx, time.Minute, func() bool { return len(m.activeOn(time.Second)) > 0 }); err != nil {
		_, _ = m.Kill() // it must not hold handovers up for the rest of the run
		return notInjected(fmt.Errorf("the stubborn replica %s got no objects: %w", p.podID, err))
	}
	return s.ring.terminate(ctx, m, faultlog.TermIgnored)
}

// injected counts the faults that began.
func (s *suite) injected() int {
	n := 0
	for _, e := range s.log.Entries() {
		if e.IsFault() {
			n++
		}
	}
	return n
}

// missing are the kinds of fault that have not begun yet.
func (s *suite) missing() []string {
	began := map[string]bool{}
	for _, e := range s.log.Entries() {
		began[e.Kind] = true
	}
	var out []string
	for _, k := range faultlog.Kinds {
		if !began[k] {
			out = append(out, k)
		}
	}
	return out
}

// skipped notes a step that found no victim: an error where every fault
// must happen (TestFaults), a count where faults come at random.
func (s *suite) skipped(p step, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lenient {
		s.skips = append(s.skips, fmt.Sprintf("%s: %v", p, err))
		return
	}
	s.errs = append(s.errs, fmt.Sprintf("%s: %v", p, err))
}
