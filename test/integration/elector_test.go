package integration

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/kopf-go/kopf/internal/ring"
)

// The election's durations in these tests: whole seconds, as the record
// declares them.
const (
	electLease    = 3 * time.Second
	electDeadline = 2 * time.Second
	electRetry    = time.Second
	// electMargin is how late after a record's expiry a watching
	// candidate may acquire it: the watch's and the write's latency, well
	// under a retry period, which a candidate that only polled would need.
	electMargin = 500 * time.Millisecond
	electName   = "kopf-shard-elect"
)

// A leader killed (it stops renewing, and does not release) is succeeded
// by the candidate that watched it at the expiry of the last renewal it
// saw, not a poll later.
func TestElectorTakesOverAKilledLeaderAtItsExpiry(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	leases := leasesIn(t, ns)
	a := &killable{ElectionLeases: leases}
	leadingA := runElector(t, a, "elector-a").leading(t)
	b := runElector(t, leases, "elector-b")
	a.renewals(t, 3)
	if b.hasWon() {
		t.Fatal("elector-b leads while elector-a renews")
	}

	last := a.kill()
	<-leadingA.Done()
	b.leading(t)
	lease := getLease(t, leases)
	took := lease.Spec.AcquireTime.Sub(last)
	t.Logf("elector-b took over %s after elector-a's last renewal", took)
	if ptr.Deref(lease.Spec.HolderIdentity, "") != "elector-b" || took < electLease-100*time.Millisecond || took > electLease+electMargin {
		t.Errorf("the Lease went to %q %s after elector-a's last renewal, want elector-b's within %s after %s",
			ptr.Deref(lease.Spec.HolderIdentity, ""), took, electMargin, electLease)
	}
	if got := ptr.Deref(lease.Spec.LeaseTransitions, -1); got != 1 {
		t.Errorf("leaseTransitions = %d, want 1", got)
	}
}

// During a rolling update, a replica of the previous version holds the
// Lease with client-go's elector: this elector takes over only once the
// record has expired, and writes a record that client-go's elector
// honours and takes over in turn, when this one is killed or releases.
func TestElectorAndClientGoElectTogether(t *testing.T) {
	t.Run("client-go's leader killed", func(t *testing.T) {
		checkLeaks(t)
		ns := env.Namespace(t)
		leases := leasesIn(t, ns)
		old := runClientGo(t, ns, "client-go", false)
		old.leading(t)
		ours := runElector(t, leases, "elector-b")
		time.Sleep(electLease + electRetry) // client-go's leader renews meanwhile
		if ours.hasWon() {
			t.Fatal("the elector took over from a client-go leader that renews")
		}
		transitions := ptr.Deref(getLease(t, leases).Spec.LeaseTransitions, -1)

		old.stop()
		last := getLease(t, leases).Spec.RenewTime.Time
		ours.leading(t)
		lease := getLease(t, leases)
		took := lease.Spec.AcquireTime.Sub(last)
		t.Logf("the elector took over %s after client-go's last renewal", took)
		if took < electLease || took > electLease+electMargin {
			t.Errorf("the elector took over %s after client-go's last renewal, want within %s after %s", took, electMargin, electLease)
		}
		if got := ptr.Deref(lease.Spec.LeaseTransitions, -1); got != transitions+1 {
			t.Errorf("leaseTransitions = %d, want %d", got, transitions+1)
		}
	})
	t.Run("this leader killed", func(t *testing.T) {
		checkLeaks(t)
		ns := env.Namespace(t)
		leases := leasesIn(t, ns)
		ours := &killable{ElectionLeases: leases}
		leading := runElector(t, ours, "elector-a").leading(t)
		successor := runClientGo(t, ns, "client-go", true)
		ours.renewals(t, int(electLease/electRetry)+1)
		if successor.hasWon() {
			t.Fatal("client-go's elector took over from a leader that renews")
		}

		last := ours.kill()
		<-leading.Done()
		successor.leading(t)
		lease := getLease(t, leases)
		// client-go's candidate polls, a retry period apart and up to
		// 1.2 retry periods more (its jitter): it sees the last renewal
		// up to a poll late, and acquires at the first poll after that
		// sighting's expiry.
		took := lease.Spec.AcquireTime.Sub(last)
		t.Logf("client-go's elector took over %s after the last renewal", took)
		if took < electLease-100*time.Millisecond || took > electLease+2*22*electRetry/10+electMargin {
			t.Errorf("client-go's elector took over %s after the last renewal, want within two polls after %s", took, electLease)
		}
	})
	t.Run("this leader released", func(t *testing.T) {
		checkLeaks(t)
		ns := env.Namespace(t)
		leases := leasesIn(t, ns)
		ours := runElector(t, leases, "elector-a")
		ours.leading(t)
		successor := runClientGo(t, ns, "client-go", true)
		time.Sleep(electRetry)
		released := time.Now()
		ours.stop()
		successor.leading(t)
		took := time.Since(released)
		t.Logf("client-go's elector took the released Lease after %s", took)
		if took >= electLease {
			t.Errorf("client-go's elector took a released Lease after %s, want before it would have expired", took)
		}
	})
}

// elector is an Elector running in a goroutine of the test's.
type elector struct {
	won  chan context.Context
	stop func()
}

func runElector(t *testing.T, leases ring.ElectionLeases, identity string) *elector {
	t.Helper()
	el, err := ring.NewElector(leases, ring.ElectorConfig{Name: electName, Identity: identity,
		LeaseDuration: electLease, RenewDeadline: electDeadline, RetryPeriod: electRetry,
		Logger: testr.New(t).WithName(identity)})
	if err != nil {
		t.Fatal(err)
	}
	e := &elector{won: make(chan context.Context, 1)}
	e.stop = runUntilStopped(t, func(ctx context.Context) { el.Run(ctx, e.won) })
	return e
}

// runClientGo runs client-go's elector, as a replica of the previous
// version does; release: whether it releases the Lease when stopped.
func runClientGo(t *testing.T, ns, identity string, release bool) *elector {
	t.Helper()
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	e := &elector{won: make(chan context.Context, 1)}
	el, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: ns, Name: electName},
			Client:     cs.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: identity},
		},
		LeaseDuration: electLease, RenewDeadline: electDeadline, RetryPeriod: electRetry,
		ReleaseOnCancel: release, Name: electName,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(leading context.Context) { e.won <- leading },
			OnStoppedLeading: func() {},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	e.stop = runUntilStopped(t, func(ctx context.Context) { el.Run(klog.NewContext(ctx, logr.Discard())) })
	return e
}

// runUntilStopped runs run in a goroutine until stop, which the test's
// cleanup calls too, and which waits for run to return.
func runUntilStopped(t *testing.T, run func(context.Context)) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		run(ctx)
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			<-done
		})
	}
	t.Cleanup(stop)
	return stop
}

// leading is the elector's leading context, once it has won.
func (e *elector) leading(t *testing.T) context.Context {
	t.Helper()
	select {
	case leading := <-e.won:
		return leading
	case <-time.After(4 * electLease):
		t.Fatal("the elector did not win")
		return nil
	}
}

// hasWon reports whether the elector has won, without waiting.
func (e *elector) hasWon() bool { return len(e.won) > 0 }

// killable is an elector's Leases whose writes all fail once killed:
// the elector stops renewing, and cannot release, as a killed process.
type killable struct {
	ring.ElectionLeases

	mu     sync.Mutex
	killed bool
	// last is when the last successful write had returned; writes counts them.
	last   time.Time
	writes int
}

var errKilled = errors.New("the test killed this elector")

func (k *killable) Create(ctx context.Context, lease *coordinationv1.Lease, opts metav1.CreateOptions) (*coordinationv1.Lease, error) {
	return k.write(func() (*coordinationv1.Lease, error) { return k.ElectionLeases.Create(ctx, lease, opts) })
}

func (k *killable) Update(ctx context.Context, lease *coordinationv1.Lease, opts metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	return k.write(func() (*coordinationv1.Lease, error) { return k.ElectionLeases.Update(ctx, lease, opts) })
}

// write writes unless killed; a kill waits for a write under way.
func (k *killable) write(write func() (*coordinationv1.Lease, error)) (*coordinationv1.Lease, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.killed {
		return nil, errKilled
	}
	lease, err := write()
	if err == nil {
		k.last, k.writes = time.Now(), k.writes+1
	}
	return lease, err
}

// kill fails every write from now on, and returns when the last
// successful one had returned.
func (k *killable) kill() time.Time {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.killed = true
	return k.last
}

// renewals waits until the elector has written the Lease n times.
func (k *killable) renewals(t *testing.T, n int) {
	t.Helper()
	eventually(t, "the leader renews", func() bool {
		k.mu.Lock()
		defer k.mu.Unlock()
		return k.writes >= n
	})
}

func leasesIn(t *testing.T, ns string) ring.ElectionLeases {
	t.Helper()
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	return cs.CoordinationV1().Leases(ns)
}

func getLease(t *testing.T, leases ring.ElectionLeases) *coordinationv1.Lease {
	t.Helper()
	lease, err := leases.Get(context.Background(), electName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return lease
}
