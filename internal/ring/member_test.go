package ring

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/kopf-go/kopf/internal/await"
	"github.com/kopf-go/kopf/internal/jitter"
)

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

const identity = "kopf@host-1/20261201100000/abcde"

func settings(fc *clocktesting.FakeClock) Settings {
	return Settings{Ring: "main", Namespace: "operators", Identity: identity, Clock: fc, Jitter: halfJitter}
}

// halfJitter draws the middle of the jitter's range every time: retries
// come a quarter of their period late (with jitter.Fraction, a half).
var halfJitter = jitter.Jitter{Fraction: jitter.Fraction, Rand: func() float64 { return 0.5 }}

// started runs a member until the test ends; result waits for Start to
// return and gives its error.
func started(t *testing.T, c client.Client, s Settings) (m *Member, cancel context.CancelFunc, result func() error) {
	t.Helper()
	m, err := NewMember(c, s)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	finished := make(chan struct{})
	var startErr error
	go func() {
		defer close(finished)
		startErr = m.Start(ctx)
	}()
	result = func() error { <-finished; return startErr }
	t.Cleanup(func() { cancel(); <-finished })
	return m, cancel, result
}

// joined waits until the member has joined.
func joined(t *testing.T, m *Member) {
	t.Helper()
	select {
	case <-m.Joined():
	case <-time.After(10 * time.Second):
		t.Fatal("the member did not join")
	}
}

// armed waits until the member waits on both of its timers, the fence's
// and the next renewal's: a fake clock's timer set after a step does not
// fire for it, so a test steps only then.
func armed(t *testing.T, fc *clocktesting.FakeClock) {
	t.Helper()
	await.True(t, "the member's timers are set", 10*time.Second, func() bool { return fc.Waiters() == 2 })
}

// checkLeaks verifies, after every other cleanup (members stopped), that
// the test left no goroutine behind.
func checkLeaks(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
}

func leaseOf(t *testing.T, c client.Client, m *Member) (*coordinationv1.Lease, error) {
	t.Helper()
	lease := &coordinationv1.Lease{}
	err := c.Get(context.Background(), client.ObjectKey{Namespace: "operators", Name: m.LeaseName()}, lease)
	return lease, err
}

func renewedAt(t *testing.T, c client.Client, m *Member, at time.Time) func() bool {
	return func() bool {
		lease, err := leaseOf(t, c, m)
		return err == nil && lease.Spec.RenewTime != nil && lease.Spec.RenewTime.Time.Equal(at)
	}
}

// notFenced fails the test if the member has been fenced.
func notFenced(t *testing.T, m *Member, when string) {
	t.Helper()
	select {
	case <-m.Fenced():
		t.Fatalf("fenced %s", when)
	default:
	}
}

// A member creates its Lease at once, labelled with its ring and marked
// with its incarnation, renews it every renew period (its tenure counting
// from each renewal's start), leaves it alone when it stops, and releases
// it when asked: a release mark, and no holder.
func TestMemberHoldsItsLease(t *testing.T) {
	checkLeaks(t)
	fc := clocktesting.NewFakeClock(t0)
	var mu sync.Mutex
	var released []string
	c := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			if obj.GetAnnotations()[ReleasedAnnotation] != "" {
				mu.Lock()
				released = append(released, ptr.Deref(obj.(*coordinationv1.Lease).Spec.HolderIdentity, ""))
				mu.Unlock()
			}
			return c.Update(ctx, obj, opts...)
		},
	}).Build()
	m, cancel, result := started(t, c, settings(fc))
	joined(t, m)
	armed(t, fc)
	if !strings.HasPrefix(m.Name(), "m") || len(m.Name()) != 13 {
		t.Errorf("Name() = %q, want m and 12 hex digits", m.Name())
	}
	if want := "kopf-shard-main-" + m.Name(); m.LeaseName() != want {
		t.Errorf("LeaseName() = %q, want %q", m.LeaseName(), want)
	}
	lease, err := leaseOf(t, c, m)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := lease.Labels["shard.kopf.dev/ring"], "main"; got != want { // a wire name
		t.Errorf("ring label = %q, want %q", got, want)
	}
	if got := lease.Annotations["shard.kopf.dev/incarnation"]; len(got) != 16 {
		t.Errorf("incarnation = %q, want 16 hex digits", got)
	}
	if got := *lease.Spec.HolderIdentity; got != identity {
		t.Errorf("holder = %q, want %q", got, identity)
	}
	if got := *lease.Spec.LeaseDurationSeconds; got != 15 {
		t.Errorf("lease duration = %d s, want 15", got)
	}
	if got := m.Tenure(); !got.Renewed.Equal(t0) || !got.FenceAt().Equal(t0.Add(DefaultRenewDeadline)) {
		t.Errorf("Tenure() = %+v, want renewed at t0", got)
	}

	fc.Step(DefaultRenewPeriod)
	await.True(t, "the Lease is renewed", 10*time.Second, renewedAt(t, c, m, t0.Add(DefaultRenewPeriod)))
	await.True(t, "the tenure counts from the renewal's start", 10*time.Second, func() bool {
		return m.Tenure().WritableUntil().Equal(t0.Add(DefaultRenewPeriod + DefaultLeaseDuration))
	})

	// The replica's stop begins between two renewals: the member renews
	// at once, marked as stopping (nothing new is placed on it), and
	// every renewal after keeps the mark, with the time it began.
	if lease, _ := leaseOf(t, c, m); Stopping(lease) {
		t.Fatalf("the Lease is marked as stopping before the stop: %v", lease.Annotations)
	} else if lease.Annotations["shard.kopf.dev/rules"] != "stops-hold" { // wire names
		t.Errorf("the Lease says the member follows the rules %q, want stops-hold", lease.Annotations["shard.kopf.dev/rules"])
	}
	armed(t, fc)
	fc.Step(time.Second)
	m.BeginStop()
	stoppedAt := t0.Add(DefaultRenewPeriod + time.Second)
	await.True(t, "the Lease is marked as stopping at once", 10*time.Second, renewedAt(t, c, m, stoppedAt))
	lease, _ = leaseOf(t, c, m)
	since := lease.Annotations["shard.kopf.dev/stopping"] // a wire name
	if !Stopping(lease) || since != stoppedAt.Format(time.RFC3339Nano) {
		t.Errorf("after the stop began the Lease says stopping %q, want %v", since, stoppedAt)
	}
	if got := m.Tenure().Renewed; !got.Equal(stoppedAt) {
		t.Errorf("the marked renewal counts from %v, want %v", got, stoppedAt)
	}
	armed(t, fc)
	fc.Step(DefaultRenewPeriod)
	await.True(t, "the member renews on while it stops", 10*time.Second, renewedAt(t, c, m, stoppedAt.Add(DefaultRenewPeriod)))
	if lease, _ := leaseOf(t, c, m); lease.Annotations[StoppingAnnotation] != since {
		t.Errorf("a renewal while stopping says %q, want the mark kept as %q", lease.Annotations[StoppingAnnotation], since)
	}
	m.BeginStop() // a second call changes nothing

	cancel()
	if err := result(); err != nil {
		t.Errorf("Start() = %v, want nil after a graceful stop", err)
	}
	lease, err = leaseOf(t, c, m)
	if err != nil || Released(lease) {
		t.Errorf("the Lease went with the stop, before the member's work was known to have stopped: %v", err)
	}
	if err := m.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The released Lease stays, for assigners that start meanwhile to see
	// the release; the assigner deletes it later.
	if lease, err := leaseOf(t, c, m); err != nil || !Released(lease) || lease.Spec.HolderIdentity != nil {
		t.Errorf("after the release: %v, %v; want the Lease marked released, with no holder", lease, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(released) != 1 || released[0] != "" {
		t.Errorf("release marks written (holders) = %q, want one, with the holder cleared", released)
	}
}

// earlierLease writes a Lease as an earlier run of the identity left it.
func earlierLease(t *testing.T, c client.Client, member string, annotations map[string]string) {
	t.Helper()
	renewed := metav1.NewMicroTime(t0.Add(-time.Second))
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "operators", Name: leaseName("main", member),
		Labels: map[string]string{RingLabel: "main"}, Annotations: annotations},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(identity), LeaseDurationSeconds: ptr.To[int32](15), RenewTime: &renewed}}
	if err := c.Create(context.Background(), lease); err != nil {
		t.Fatal(err)
	}
}

// A restart takes over the Lease that an earlier run of its identity left,
// under that run's name, so that its objects are handled at once; a
// released one it does not take: that run's objects have moved.
func TestMemberTakesOverTheLeaseOfAnEarlierRun(t *testing.T) {
	checkLeaks(t)
	c := fake.NewClientBuilder().Build()
	earlierLease(t, c, "mearlier00001", map[string]string{IncarnationAnnotation: "0000000000000001", StoppingAnnotation: "2026-12-01T09:59:58Z"})
	earlierLease(t, c, "mreleased0001", map[string]string{IncarnationAnnotation: "0000000000000002", ReleasedAnnotation: "2026-12-01T09:00:00Z"})
	fc := clocktesting.NewFakeClock(t0)
	m, _, _ := started(t, c, settings(fc))
	joined(t, m)
	if m.Name() != "mearlier00001" {
		t.Fatalf("Name() = %q, want the earlier run's mearlier00001", m.Name())
	}
	lease, _ := leaseOf(t, c, m)
	if got := lease.Annotations[IncarnationAnnotation]; got == "0000000000000001" {
		t.Error("the Lease still names the earlier run's incarnation")
	}
	if Stopping(lease) {
		t.Error("the Lease still says the earlier run was stopping")
	}
	if got := lease.Spec.AcquireTime; got == nil || !got.Time.Equal(t0) {
		t.Errorf("acquireTime = %v, want t0", got)
	}
}

// A new run without a Lease to take over is a new incarnation: a name of
// its own, though its identity is the same.
func TestMemberWithoutAnEarlierLeaseIsANewIncarnation(t *testing.T) {
	checkLeaks(t)
	c := fake.NewClientBuilder().Build()
	var names []string
	for range 2 {
		m, cancel, result := started(t, c, settings(clocktesting.NewFakeClock(t0)))
		joined(t, m)
		names = append(names, m.Name())
		cancel()
		if err := result(); err != nil {
			t.Fatal(err)
		}
		if err := m.Release(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if names[0] == names[1] {
		t.Errorf("two runs without a Lease to take over share the name %q", names[0])
	}
}

// hangingUpdates makes every Lease update after the first n hang until its
// context ends, as an API server behind a black hole would.
func hangingUpdates(n int) (client.Client, func() int) {
	var mu sync.Mutex
	calls := 0
	c := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			mu.Lock()
			calls++
			hang := calls > n
			mu.Unlock()
			if hang {
				<-ctx.Done()
				return ctx.Err()
			}
			return c.Update(ctx, obj, opts...)
		},
	}).Build()
	return c, func() int { mu.Lock(); defer mu.Unlock(); return calls }
}

// A member whose renewals hang fences itself on its own timer, exactly
// the renew deadline after the start of its last successful renewal (not
// at a later renew tick), returns ErrRenewDeadline, and leaves its Lease
// to expire: it never releases it.
func TestMemberFencesItselfAtTheRenewDeadline(t *testing.T) {
	checkLeaks(t)
	fc := clocktesting.NewFakeClock(t0)
	c, calls := hangingUpdates(1) // the renewal at 5 s succeeds, the rest hang
	m, _, result := started(t, c, settings(fc))
	joined(t, m)
	armed(t, fc)

	fc.Step(DefaultRenewPeriod)
	await.True(t, "the renewal at 5 s", 10*time.Second, renewedAt(t, c, m, t0.Add(DefaultRenewPeriod)))
	await.True(t, "the tenure counts from 5 s", 10*time.Second, func() bool { return m.Tenure().Renewed.Equal(t0.Add(DefaultRenewPeriod)) })
	armed(t, fc)
	fc.Step(DefaultRenewPeriod) // 10 s: the next renewal hangs
	await.True(t, "a renewal hangs", 10*time.Second, func() bool { return calls() >= 2 })
	fc.Step(DefaultRenewDeadline - DefaultRenewPeriod - time.Millisecond) // 14.999 s
	// The member acts on time only through the fake clock's timers, and a
	// step fires every timer due by then before it returns: the fence's
	// timer still waiting now (the renewal's fired at 10 s and is not set
	// again while the renewal hangs) proves that nothing made the member
	// fence itself before 15 s, however slowly its goroutine runs.
	if n := fc.Waiters(); n != 1 {
		t.Fatalf("at 14.999 s, %d timers wait, want 1 (the fence's): a timer due before the renew deadline fired", n)
	}
	notFenced(t, m, "before the renew deadline after the last renewal's start")

	fc.Step(time.Millisecond) // 15 s: 10 s after the renewal that began at 5 s
	if err := result(); !errors.Is(err, ErrRenewDeadline) || !errors.Is(err, ErrMembershipLost) {
		t.Errorf("Start() = %v, want ErrRenewDeadline, a kind of ErrMembershipLost", err)
	}
	select {
	case <-m.Fenced():
	default:
		t.Error("Fenced() is not closed")
	}
	if err := m.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	lease, err := leaseOf(t, c, m)
	if err != nil || Released(lease) {
		t.Errorf("the fenced member gave up its Lease (%v): others must wait for it to expire", err)
	}
}

// A renewal that fails is tried again after a fifth of the renew period
// and its jitter, so that one failure does not cost a renew period of the
// deadline.
func TestMemberRetriesAFailedRenewal(t *testing.T) {
	checkLeaks(t)
	fc := clocktesting.NewFakeClock(t0)
	var mu sync.Mutex
	fails := 1
	c := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			mu.Lock()
			defer mu.Unlock()
			if fails > 0 {
				fails--
				return errors.New("connection refused")
			}
			return c.Update(ctx, obj, opts...)
		},
	}).Build()
	m, _, _ := started(t, c, settings(fc))
	joined(t, m)
	armed(t, fc)
	fc.Step(DefaultRenewPeriod)
	await.True(t, "the failure", 10*time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return fails == 0 })
	armed(t, fc)
	// The retry period passes, and the member's timers still wait (a
	// retry without jitter would have fired, renewed, and been set again
	// from that renewal); then the jitter (a quarter of the period, as
	// drawn) passes, and the retry begins.
	fc.Step(retryPeriod(DefaultRenewPeriod))
	armed(t, fc)
	fc.Step(retryPeriod(DefaultRenewPeriod) / 4)
	await.True(t, "the retry renews", 10*time.Second, renewedAt(t, c, m, t0.Add(DefaultRenewPeriod+retryPeriod(DefaultRenewPeriod)*5/4)))
	notFenced(t, m, "after a renewal that was retried in time")
}

// A member whose Lease is deleted under it (by hand, say) stops at its
// next renewal, before its deadline, and does not write a new Lease: the
// ring waits for the deleted one to expire before it moves the objects.
func TestMemberFencesItselfWhenItsLeaseIsDeleted(t *testing.T) {
	checkLeaks(t)
	fc := clocktesting.NewFakeClock(t0)
	c := fake.NewClientBuilder().Build()
	m, _, result := started(t, c, settings(fc))
	joined(t, m)
	armed(t, fc)
	lease, _ := leaseOf(t, c, m)
	if err := c.Delete(context.Background(), lease); err != nil {
		t.Fatal(err)
	}

	fc.Step(DefaultRenewPeriod) // well before the renew deadline
	if err := result(); !errors.Is(err, ErrLeaseDeleted) || !errors.Is(err, ErrMembershipLost) {
		t.Errorf("Start() = %v, want ErrLeaseDeleted, a kind of ErrMembershipLost", err)
	}
	if _, err := leaseOf(t, c, m); !apierrors.IsNotFound(err) {
		t.Errorf("the member created its Lease again (%v): it must not rejoin on its own", err)
	}
}

// A Lease edited under its member: an edit that keeps it the member's (a
// label removed by hand) is put right at the next renewal; one that makes
// it someone else's (another process's incarnation, a release written by
// hand) fences the member at once.
func TestMemberAndItsLeaseEditedByHand(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(*coordinationv1.Lease)
		fence bool
	}{
		{"the ring's label removed", func(l *coordinationv1.Lease) { delete(l.Labels, RingLabel) }, false},
		{"the lease duration shortened", func(l *coordinationv1.Lease) { l.Spec.LeaseDurationSeconds = ptr.To[int32](1) }, false},
		{"taken over by another process", func(l *coordinationv1.Lease) { l.Annotations[IncarnationAnnotation] = "ffffffffffffffff" }, true},
		{"released by hand", func(l *coordinationv1.Lease) { l.Annotations[ReleasedAnnotation] = "now" }, true},
		{"another holder", func(l *coordinationv1.Lease) { l.Spec.HolderIdentity = ptr.To("someone-else") }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkLeaks(t)
			fc := clocktesting.NewFakeClock(t0)
			c := fake.NewClientBuilder().Build()
			m, _, result := started(t, c, settings(fc))
			joined(t, m)
			armed(t, fc)
			lease, _ := leaseOf(t, c, m)
			tt.edit(lease)
			if err := c.Update(context.Background(), lease); err != nil {
				t.Fatal(err)
			}
			fc.Step(DefaultRenewPeriod)
			if tt.fence {
				if err := result(); !errors.Is(err, ErrLeaseTaken) {
					t.Errorf("Start() = %v, want ErrLeaseTaken", err)
				}
				return
			}
			await.True(t, "the Lease is renewed", 10*time.Second, renewedAt(t, c, m, t0.Add(DefaultRenewPeriod)))
			notFenced(t, m, "after an edit that left the Lease the member's")
			lease, _ = leaseOf(t, c, m)
			if lease.Labels[RingLabel] != "main" || *lease.Spec.LeaseDurationSeconds != 15 {
				t.Errorf("the edit was not put right: labels %v, duration %d s", lease.Labels, *lease.Spec.LeaseDurationSeconds)
			}
		})
	}
}

func TestSettingsMustNest(t *testing.T) {
	tests := []struct {
		name string
		s    Settings
		want string
	}{
		{"defaults", Settings{Ring: "r", Namespace: "n", Identity: "i"}, ""},
		{"no ring", Settings{Namespace: "n", Identity: "i"}, "needs a ring"},
		{"deadline past the lease", Settings{Ring: "r", Namespace: "n", Identity: "i", Durations: Durations{RenewDeadline: 20 * time.Second}}, "must nest"},
		{"period past the deadline", Settings{Ring: "r", Namespace: "n", Identity: "i", Durations: Durations{RenewPeriod: 10 * time.Second}}, "must nest"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewMember(fake.NewClientBuilder().Build(), tt.s)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("NewMember() = %v, want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("NewMember() = %v, want an error saying %q", err, tt.want)
			}
		})
	}
}

// A lease duration that is not whole seconds is stated rounded up: the
// others must not count the member dead before its own duration is over.
func TestLeaseSeconds(t *testing.T) {
	for d, want := range map[time.Duration]int32{15 * time.Second: 15, 14400 * time.Millisecond: 15, 6 * time.Second: 6} {
		if got := leaseSeconds(d); got != want {
			t.Errorf("leaseSeconds(%s) = %d, want %d", d, got, want)
		}
	}
}

// A member's release of a Lease that changed since its last renewal (a
// renewal that landed after its caller gave up on it, or an edit of
// someone else's) reads it again and releases it if it is still the
// member's; one taken over by another process is left alone.
func TestReleaseOfALeaseThatChangedMeanwhile(t *testing.T) {
	for _, tt := range []struct {
		name     string
		edit     func(*coordinationv1.Lease)
		released bool
	}{
		{"still the member's", func(l *coordinationv1.Lease) { l.Labels["edited"] = "yes" }, true},
		{"taken over", func(l *coordinationv1.Lease) { l.Annotations[IncarnationAnnotation] = "ffffffffffffffff" }, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			checkLeaks(t)
			fc := clocktesting.NewFakeClock(t0)
			c := fake.NewClientBuilder().Build()
			m, cancel, result := started(t, c, settings(fc))
			joined(t, m)
			cancel()
			if err := result(); err != nil {
				t.Fatal(err)
			}
			lease, _ := leaseOf(t, c, m)
			tt.edit(lease)
			if err := c.Update(context.Background(), lease); err != nil {
				t.Fatal(err)
			}
			if err := m.Release(context.Background()); err != nil {
				t.Fatalf("Release() = %v, want nil", err)
			}
			lease, _ = leaseOf(t, c, m)
			if Released(lease) != tt.released {
				t.Errorf("the Lease released: %v, want %v", Released(lease), tt.released)
			}
		})
	}
}
