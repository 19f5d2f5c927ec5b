package ring

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

// The elector's durations in these tests: a lease of 15 s, a renew
// deadline of 10 s, a retry period of 4 s; 15 is no multiple of 4, so an
// acquisition at 15 s is the expiry's, not a poll's.
const (
	testLease    = 15 * time.Second
	testDeadline = 10 * time.Second
	testRetry    = 4 * time.Second
)

// candidate is an elector running in a goroutine of the test's.
type candidate struct {
	won    chan context.Context
	cancel context.CancelFunc
	done   chan struct{}
}

// checkNoLeaks fails the test if goroutines it started outlive it; call
// it before starting any.
func checkNoLeaks(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
}

// candidateAfterFirstRead starts a candidate on a fake Lease API holding
// the lease (nil: none), under a fake clock, and waits for its first read;
// the test checks that no goroutine outlives it.
func candidateAfterFirstRead(t *testing.T, lease *coordinationv1.Lease) (*clocktesting.FakeClock, *electionLeases, *candidate) {
	t.Helper()
	checkNoLeaks(t)
	clk := clocktesting.NewFakeClock(t0)
	leases := newElectionLeases(clk, lease)
	c := startCandidate(t, leases, clk, identity)
	leases.next(t, "get", t0)
	return clk, leases, c
}

func startCandidate(t *testing.T, leases ElectionLeases, clk *clocktesting.FakeClock, id string) *candidate {
	t.Helper()
	return startCandidateSeen(t, leases, clk, id, Observation{})
}

// startCandidateSeen starts a candidate that saw the record before.
func startCandidateSeen(t *testing.T, leases ElectionLeases, clk *clocktesting.FakeClock, id string, seen Observation) *candidate {
	t.Helper()
	el, err := NewElector(leases, ElectorConfig{Name: electedLease, Identity: id, Seen: seen,
		LeaseDuration: testLease, RenewDeadline: testDeadline, RetryPeriod: testRetry, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &candidate{won: make(chan context.Context, 1), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		el.Run(ctx, c.won)
	}()
	t.Cleanup(c.stop)
	return c
}

// stop ends the candidate's Run and waits for it to return.
func (c *candidate) stop() {
	c.cancel()
	<-c.done
}

// leading is the candidate's leading context, once it has won.
func (c *candidate) leading(t *testing.T) context.Context {
	t.Helper()
	select {
	case leading := <-c.won:
		return leading
	case <-time.After(10 * time.Second):
		t.Fatal("the candidate did not win")
		return nil
	}
}

// acquired is the record that a candidate writes when it acquires the
// Lease at, after transitions changes of holder before it.
func acquired(id string, at time.Time, transitions int32) coordinationv1.LeaseSpec {
	now := metav1.NewMicroTime(at)
	return coordinationv1.LeaseSpec{HolderIdentity: ptr.To(id), LeaseDurationSeconds: ptr.To(int32(15)),
		AcquireTime: &now, RenewTime: &now, LeaseTransitions: ptr.To(transitions)}
}

// A candidate acquires a Lease that another holds at the moment the
// record it saw expires, a lease duration after it saw it, by its own
// clock: not before (the record's renew time, an hour old, does not
// count), and not at the next poll after.
func TestElectorAcquiresAtTheObservedExpiry(t *testing.T) {
	clk, leases, c := candidateAfterFirstRead(t, heldBy("other"))
	leases.watching(t)

	clk.Step(12 * time.Second)
	leases.next(t, "get", t0.Add(12*time.Second)) // a poll: unchanged, not expired
	clk.Step(3*time.Second - time.Nanosecond)
	clk.Step(time.Nanosecond)
	call := leases.next(t, "update", t0.Add(testLease))
	if diff := cmp.Diff(acquired(identity, t0.Add(testLease), 4), call.written.Spec); diff != "" {
		t.Errorf("the acquired record -want +got:\n%s", diff)
	}
	c.leading(t)
}

// A record that the replica saw before it campaigned counts from then,
// if it is still the same: a replica whose candidacy began because
// nobody renewed the election does not wait another lease duration. A
// record it saw that has changed since counts for nothing.
func TestElectorCountsFromTheRecordSeenBeforeTheCampaign(t *testing.T) {
	for _, tc := range []struct {
		name   string
		same   bool
		expiry time.Duration
	}{
		{"the same record", true, testLease - 10*time.Second},
		{"a record changed since", false, testLease},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkNoLeaks(t)
			clk := clocktesting.NewFakeClock(t0)
			leases := newElectionLeases(clk, heldBy("other"))
			seen := leases.lease.DeepCopy()
			if !tc.same {
				leases.write(func(s *coordinationv1.LeaseSpec) { s.RenewTime = ptr.To(metav1.NewMicroTime(t0)) })
			}
			c := startCandidateSeen(t, leases, clk, identity, Observation{Lease: seen, At: t0.Add(-10 * time.Second)})
			leases.next(t, "get", t0)
			leases.watching(t)
			clk.Step(tc.expiry - time.Nanosecond)
			// Only polls until the expiry (the elector has its moment to
			// act on the step).
			for quiet := time.After(200 * time.Millisecond); ; {
				var call leaseCall
				select {
				case call = <-leases.calls:
				case <-quiet:
				}
				if call.verb == "" {
					break
				}
				if call.verb != "get" {
					t.Fatalf("%s at %s, before the record seen expired", call.verb, call.at.Sub(t0))
				}
			}
			clk.Step(time.Nanosecond)
			for {
				call := leases.any(t)
				if call.verb == "update" {
					if got := call.at.Sub(t0); got != tc.expiry {
						t.Errorf("acquired %s after the campaign began, want %s", got, tc.expiry)
					}
					break
				}
			}
			c.leading(t)
		})
	}
}

// A renewal that the watch shows counts from when it was seen: the
// candidate waits a lease duration from then, not from the first record.
func TestElectorCountsFromTheRenewalSeen(t *testing.T) {
	clk, leases, c := candidateAfterFirstRead(t, heldBy("other"))
	w := leases.watching(t)

	clk.Step(10 * time.Second)
	leases.next(t, "get", t0.Add(10*time.Second))
	// The holder's clock is half an hour behind: it does not matter.
	show(w, leases.write(func(s *coordinationv1.LeaseSpec) {
		s.RenewTime = ptr.To(metav1.NewMicroTime(t0.Add(-30 * time.Minute)))
	}))
	clk.Step(5 * time.Second)
	leases.next(t, "get", t0.Add(15*time.Second)) // the first record's expiry passes
	clk.Step(10*time.Second - time.Nanosecond)
	leases.next(t, "get", t0.Add(25*time.Second-time.Nanosecond))
	clk.Step(time.Nanosecond)
	leases.next(t, "update", t0.Add(25*time.Second))
	c.leading(t)
}

// A Lease that its holder released, that is absent, or that is deleted
// is acquired at once.
func TestElectorTakesAFreeLeaseAtOnce(t *testing.T) {
	t.Run("released", func(t *testing.T) {
		clk, leases, c := candidateAfterFirstRead(t, heldBy("other"))
		w := leases.watching(t)
		clk.Step(2 * time.Second)
		now := metav1.NewMicroTime(clk.Now())
		// As client-go's elector releases a Lease.
		w.Modify(leases.write(func(s *coordinationv1.LeaseSpec) {
			s.HolderIdentity, s.LeaseDurationSeconds, s.AcquireTime, s.RenewTime = ptr.To(""), ptr.To(int32(1)), &now, &now
		}))
		call := leases.next(t, "update", t0.Add(2*time.Second))
		if diff := cmp.Diff(acquired(identity, t0.Add(2*time.Second), 4), call.written.Spec); diff != "" {
			t.Errorf("the acquired record -want +got:\n%s", diff)
		}
		c.leading(t)
	})
	t.Run("absent", func(t *testing.T) {
		_, leases, c := candidateAfterFirstRead(t, nil)
		call := leases.next(t, "create", t0)
		if diff := cmp.Diff(acquired(identity, t0, 0), call.written.Spec); diff != "" {
			t.Errorf("the created record -want +got:\n%s", diff)
		}
		c.leading(t)
	})
	t.Run("deleted", func(t *testing.T) {
		clk, leases, c := candidateAfterFirstRead(t, heldBy("other"))
		w := leases.watching(t)
		clk.Step(2 * time.Second)
		w.Delete(leases.remove())
		leases.next(t, "create", t0.Add(2*time.Second))
		c.leading(t)
	})
}

// A candidate whose watch fails reads the Lease every retry period, and
// watches again: it learns of a release at the next read, and takes the
// Lease then.
func TestElectorReadsWhileItCannotWatch(t *testing.T) {
	checkNoLeaks(t)
	clk := clocktesting.NewFakeClock(t0)
	leases := newElectionLeases(clk, heldBy("other"))
	leases.failWatch = errors.New("the test's API server serves no watches")
	c := startCandidate(t, leases, clk, identity)
	leases.next(t, "get", t0)
	leases.next(t, "watch", t0)
	leases.write(func(s *coordinationv1.LeaseSpec) { s.HolderIdentity = ptr.To("") })
	clk.Step(testRetry)
	leases.next(t, "get", t0.Add(testRetry))
	leases.next(t, "update", t0.Add(testRetry))
	c.leading(t)
}

// Two candidates see a release at once; the one that writes second
// conflicts, reads the Lease again, and follows the winner, whose
// renewals its polls see, rather than lead too.
func TestElectorLosesAConflict(t *testing.T) {
	checkNoLeaks(t)
	clk := clocktesting.NewFakeClock(t0)
	leases := newElectionLeases(clk, heldBy("other"))
	a := startCandidate(t, leases, clk, "candidate-a")
	leases.next(t, "get", t0)
	wa := leases.watching(t)
	b := startCandidate(t, leases, clk, "candidate-b")
	leases.next(t, "get", t0)
	wb := leases.watching(t)

	released := leases.write(func(s *coordinationv1.LeaseSpec) { s.HolderIdentity = ptr.To("") })
	wa.Modify(released)
	if call := leases.next(t, "update", t0); holder(call.written) != "candidate-a" || call.err != nil {
		t.Fatalf("the first write: %s by %q (%v), want candidate-a's acquisition", call.verb, holder(call.written), call.err)
	}
	a.leading(t)
	wb.Modify(released)
	if call := leases.next(t, "update", t0); holder(call.written) != "candidate-b" || !apierrors.IsConflict(call.err) {
		t.Fatalf("the second write: %s by %q (%v), want candidate-b's, in conflict", call.verb, holder(call.written), call.err)
	}
	leases.next(t, "get", t0)

	// Past the lease duration from the conflict, A renews and B reads.
	for range 5 {
		clk.Step(testRetry)
		verbs := map[string]int{}
		for range 2 {
			call := leases.any(t)
			if call.verb == "update" && (holder(call.written) != "candidate-a" || call.err != nil) {
				t.Fatalf("at %s: an update by %q (%v), want only candidate-a's renewals", call.at.Sub(t0), holder(call.written), call.err)
			}
			verbs[call.verb]++
		}
		if diff := cmp.Diff(map[string]int{"get": 1, "update": 1}, verbs); diff != "" {
			t.Fatalf("requests at %s -want +got:\n%s", clk.Now().Sub(t0), diff)
		}
	}
	select {
	case <-b.won:
		t.Fatal("candidate-b leads too")
	default:
	}
	if got := leases.holder(); got != "candidate-a" {
		t.Errorf("holder = %q, want candidate-a", got)
	}
}

// A leader that cannot renew the Lease stops leading a renew deadline
// after its last successful renewal began, not after a failed one; it
// releases the Lease only once its Run's context ends, when its term has
// stopped.
func TestElectorStepsDownAtTheRenewDeadline(t *testing.T) {
	clk, leases, c := candidateAfterFirstRead(t, nil)
	leases.next(t, "create", t0)
	leading := c.leading(t)

	refused := errors.New("the test's API server refuses the leader")
	leases.setFailWrites(refused)
	clk.Step(testRetry)
	leases.next(t, "update", t0.Add(4*time.Second))
	leases.setFailWrites(nil)
	clk.Step(testRetry)
	leases.next(t, "update", t0.Add(8*time.Second)) // the deadline is 18 s now
	leases.setFailWrites(refused)
	clk.Step(testRetry)
	leases.next(t, "update", t0.Add(12*time.Second))
	clk.Step(testRetry)
	leases.next(t, "update", t0.Add(16*time.Second))
	clk.Step(2*time.Second - time.Nanosecond)
	if leading.Err() != nil {
		t.Fatalf("the leader stepped down at %s, before its renew deadline", clk.Now().Sub(t0))
	}
	clk.Step(time.Nanosecond)
	select {
	case <-leading.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the leader did not step down at its renew deadline")
	}

	leases.setFailWrites(nil)
	c.stop()
	call := leases.next(t, "update", t0.Add(18*time.Second))
	released := metav1.NewMicroTime(t0.Add(18 * time.Second))
	want := coordinationv1.LeaseSpec{HolderIdentity: ptr.To(""), LeaseDurationSeconds: ptr.To(int32(1)),
		AcquireTime: &released, RenewTime: &released, LeaseTransitions: ptr.To(int32(0))}
	if diff := cmp.Diff(want, call.written.Spec); diff != "" {
		t.Errorf("the released record -want +got:\n%s", diff)
	}
}

// A leader releases the Lease as client-go's elector does when its Run's
// context ends; one whose Lease another candidate took leaves it alone.
func TestElectorReleasesOnCancel(t *testing.T) {
	t.Run("held", func(t *testing.T) {
		clk, leases, c := candidateAfterFirstRead(t, heldBy("other"))
		leases.watching(t).Modify(leases.write(func(s *coordinationv1.LeaseSpec) { s.HolderIdentity = ptr.To("") }))
		leases.next(t, "update", t0)
		leading := c.leading(t)
		clk.Step(time.Second)
		c.stop()
		if leading.Err() == nil {
			t.Error("the leading context outlived Run")
		}
		call := leases.next(t, "update", t0.Add(time.Second))
		if got := call.written.Spec; call.err != nil || holder(call.written) != "" || *got.LeaseDurationSeconds != 1 || *got.LeaseTransitions != 4 {
			t.Errorf("the release wrote %+v (%v), want no holder, a lease of 1 s, the transitions kept", got, call.err)
		}
		if got := leases.holder(); got != "" {
			t.Errorf("holder after the release = %q, want none", got)
		}
	})
	t.Run("taken", func(t *testing.T) {
		clk, leases, c := candidateAfterFirstRead(t, nil)
		leases.next(t, "create", t0)
		leading := c.leading(t)
		leases.write(func(s *coordinationv1.LeaseSpec) { s.HolderIdentity = ptr.To("other") })
		clk.Step(testRetry)
		leases.next(t, "update", t0.Add(testRetry)) // in conflict
		leases.next(t, "get", t0.Add(testRetry))    // another's now
		<-leading.Done()
		c.stop()
		select {
		case call := <-leases.calls:
			t.Errorf("a %s after the Lease was taken, want none", call.verb)
		default:
		}
		if got := leases.holder(); got != "other" {
			t.Errorf("holder = %q, want other", got)
		}
	})
}

func TestNewElector(t *testing.T) {
	valid := ElectorConfig{Name: electedLease, Identity: identity, LeaseDuration: testLease, RenewDeadline: testDeadline, RetryPeriod: testRetry}
	tests := []struct {
		name   string
		change func(*ElectorConfig)
		err    string // a part of the error; "" for none
	}{
		{"valid", func(*ElectorConfig) {}, ""},
		{"no name", func(c *ElectorConfig) { c.Name = "" }, "needs a Lease name"},
		{"no identity", func(c *ElectorConfig) { c.Identity = "" }, "an identity"},
		{"no retry period", func(c *ElectorConfig) { c.RetryPeriod = 0 }, "must nest"},
		{"a deadline past the lease", func(c *ElectorConfig) { c.RenewDeadline = testLease }, "must nest"},
		{"a retry past the deadline", func(c *ElectorConfig) { c.RetryPeriod = testDeadline }, "must nest"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := valid
			tt.change(&c)
			_, err := NewElector(nil, c)
			switch {
			case tt.err == "" && err != nil:
				t.Errorf("NewElector() = %v", err)
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
				t.Errorf("NewElector() = %v, want an error saying %q", err, tt.err)
			}
		})
	}
}
