package ring

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/kopf-go/kopf/internal/sharding"
)

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

const identity = "kopf@host-1/20261201100000/abcde"

func settings(fc *clocktesting.FakeClock) Settings {
	return Settings{Ring: "main", Namespace: "operators", Identity: identity, Clock: fc}
}

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

// checkLeaks verifies, after every other cleanup (members stopped), that
// the test left no goroutine behind.
func checkLeaks(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
}

// eventually polls a condition that another goroutine makes true.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting: %s", what)
		}
	}
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

// A member creates its Lease at once, labelled with its ring, renews it
// every renew period, and deletes it when it stops.
func TestMemberHoldsItsLease(t *testing.T) {
	checkLeaks(t)
	fc := clocktesting.NewFakeClock(t0)
	c := fake.NewClientBuilder().Build()
	m, cancel, result := started(t, c, settings(fc))
	if !m.WritableUntil().IsZero() && !m.WritableUntil().Equal(t0.Add(DefaultLeaseDuration)) {
		t.Errorf("WritableUntil() = %v before the first renewal's end", m.WritableUntil())
	}

	eventually(t, "the Lease is created", renewedAt(t, c, m, t0))
	lease, _ := leaseOf(t, c, m)
	if got, want := lease.Labels["shard.kopf.dev/ring"], "main"; got != want { // a wire name
		t.Errorf("ring label = %q, want %q", got, want)
	}
	if got := *lease.Spec.HolderIdentity; got != identity {
		t.Errorf("holder = %q, want %q", got, identity)
	}
	if got := *lease.Spec.LeaseDurationSeconds; got != 15 {
		t.Errorf("lease duration = %d s, want 15", got)
	}
	if want := "kopf-shard-main-" + sharding.MemberName(identity); m.LeaseName() != want {
		t.Errorf("Lease name = %q, want %q", m.LeaseName(), want)
	}

	eventually(t, "the member may write", func() bool { return m.WritableUntil().Equal(t0.Add(DefaultLeaseDuration)) })

	fc.Step(DefaultRenewPeriod)
	eventually(t, "the Lease is renewed", renewedAt(t, c, m, t0.Add(DefaultRenewPeriod)))
	// Each renewal extends the member's writes by a lease duration from
	// when it was sent.
	eventually(t, "the writes are extended", func() bool {
		return m.WritableUntil().Equal(t0.Add(DefaultRenewPeriod + DefaultLeaseDuration))
	})

	cancel()
	if err := result(); err != nil {
		t.Errorf("Start() = %v, want nil after a graceful stop", err)
	}
	if _, err := leaseOf(t, c, m); !apierrors.IsNotFound(err) {
		t.Errorf("the Lease is still there after the stop: %v", err)
	}
}

// A Lease left by an earlier run of the same identity is taken over.
func TestMemberTakesOverItsOldLease(t *testing.T) {
	checkLeaks(t)
	fc := clocktesting.NewFakeClock(t0)
	c := fake.NewClientBuilder().Build()
	earlier := clocktesting.NewFakeClock(t0.Add(-time.Hour))
	old, oldCancel, oldResult := started(t, c, settings(earlier))
	eventually(t, "the earlier run's Lease", renewedAt(t, c, old, t0.Add(-time.Hour)))
	oldCancel()
	if err := oldResult(); err != nil {
		t.Fatal(err)
	}
	// A crashed run leaves its Lease: write it back as it was.
	lease := &coordinationv1.Lease{}
	lease.Namespace, lease.Name, lease.Labels = "operators", old.LeaseName(), map[string]string{RingLabel: "main"}
	lease.Spec = *old.lease.Spec.DeepCopy()
	if err := c.Create(context.Background(), lease); err != nil {
		t.Fatal(err)
	}

	m, _, _ := started(t, c, settings(fc))
	eventually(t, "the Lease is taken over", renewedAt(t, c, m, t0))
}

// A member that cannot renew fences itself at the renew deadline (not
// before), returns ErrMembershipLost, and leaves its Lease to expire.
func TestMemberFencesItselfAtTheRenewDeadline(t *testing.T) {
	checkLeaks(t)
	fc := clocktesting.NewFakeClock(t0)
	var failed atomic.Int32
	c := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			failed.Add(1)
			return errors.New("the API server is unreachable")
		},
	}).Build()
	m, _, result := started(t, c, settings(fc))
	eventually(t, "the Lease is created", renewedAt(t, c, m, t0))

	fc.Step(DefaultRenewPeriod)
	eventually(t, "a renewal fails", func() bool { return failed.Load() >= 1 })
	select {
	case <-m.Fenced():
		t.Fatal("fenced 5 s after the last renewal, before the 10 s deadline")
	default:
	}

	fc.Step(DefaultRenewPeriod)
	if err := result(); !errors.Is(err, ErrMembershipLost) {
		t.Errorf("Start() = %v, want ErrMembershipLost", err)
	}
	select {
	case <-m.Fenced():
	default:
		t.Error("Fenced() is not closed")
	}
	if _, err := leaseOf(t, c, m); err != nil {
		t.Errorf("the fenced member deleted its Lease (%v): others must wait for it to expire", err)
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
		{"deadline past the lease", Settings{Ring: "r", Namespace: "n", Identity: "i", RenewDeadline: 20 * time.Second}, "must nest"},
		{"period past the deadline", Settings{Ring: "r", Namespace: "n", Identity: "i", RenewPeriod: 10 * time.Second}, "must nest"},
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

// A member whose Lease is deleted under it stops at once: the assigner
// counts a deleted Lease as a member that left, and moves its objects
// without waiting.
func TestMemberFencesItselfWhenItsLeaseIsDeleted(t *testing.T) {
	checkLeaks(t)
	fc := clocktesting.NewFakeClock(t0)
	c := fake.NewClientBuilder().Build()
	m, _, result := started(t, c, settings(fc))
	eventually(t, "the Lease is created", renewedAt(t, c, m, t0))
	lease, _ := leaseOf(t, c, m)
	if err := c.Delete(context.Background(), lease); err != nil {
		t.Fatal(err)
	}

	fc.Step(DefaultRenewPeriod) // well before the renew deadline
	if err := result(); !errors.Is(err, ErrLeaseDeleted) || !errors.Is(err, ErrMembershipLost) {
		t.Errorf("Start() = %v, want ErrLeaseDeleted, a kind of ErrMembershipLost", err)
	}
	select {
	case <-m.Fenced():
	default:
		t.Error("Fenced() is not closed")
	}
	if _, err := leaseOf(t, c, m); !apierrors.IsNotFound(err) {
		t.Errorf("the member created its Lease again (%v): it must not rejoin on its own", err)
	}
}
