package share

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/kopf-go/kopf/internal/freeze"
	"github.com/kopf-go/kopf/internal/ring"
)

// Sharding makes the operator a member of a ring of replicas that share
// its objects (docs/sharding.md); a zero Ring: not sharded. The engine's
// settings hold it.
type Sharding struct {
	// Ring names the ring: one per operator deployment.
	Ring string
	// Namespace holds the ring's Leases.
	Namespace string
	// Durations: see Durations; resolved once, at setup.
	ring.Durations
	// AssignerWorkers: see ring.AssignerSettings.Workers.
	AssignerWorkers int
	// Lost, if set, is closed when the member loses its membership.
	Lost chan struct{}
	// Placer, if set, is given the member's ownership, to place objects
	// at their creation (admission.go).
	Placer *Placer
	// Finalizer is the operator's: placement at admission gives it to
	// the objects of kinds that handlers or daemons work on, as the
	// member's engine would (ownership.Ownership's KeepsNames).
	Finalizer string
	// NoStandby keeps the member from watching, before anyone dies, the
	// buckets it would adopt (adopting.go): it holds its share alone, and
	// a takeover lists the dead member's objects first.
	NoStandby bool
}

// everyReplica runs a runnable on every replica, whether it leads or not:
// a ring's members all handle objects, each its own.
type everyReplica struct{ manager.Runnable }

func (everyReplica) NeedLeaderElection() bool { return false }

// finishing closes done when the runnable has returned.
type finishing struct {
	manager.Runnable
	done chan struct{}
}

func newFinishing(r manager.Runnable) *finishing {
	return &finishing{Runnable: r, done: make(chan struct{})}
}

func (f *finishing) Start(ctx context.Context) error {
	defer close(f.done)
	return f.Runnable.Start(ctx)
}

func (f *finishing) NeedLeaderElection() bool { return false }

// membership holds the member's Lease while the replica runs. On a
// graceful stop, it releases the Lease only after the engine and the
// supervisor have stopped and no daemon, timer or handler runs any more
// (docs/sharding.md, "Leaving"): the ring then moves the member's objects
// at once, so nothing of this member may still run. If something still
// runs (a daemon that ignored its stop), the Lease is left to expire
// instead. When the member loses its membership, the error stops the
// manager; the engine has cancelled its work at the fence already.
type membership struct {
	member *ring.Member
	idle   func() bool
	log    logr.Logger
	// after are the runnables that stop before the Lease goes.
	after []*finishing
}

func (m *membership) NeedLeaderElection() bool { return false }

func (m *membership) Start(ctx context.Context) error {
	memberCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	result := make(chan error, 1)
	go func() { result <- m.member.Start(memberCtx) }()
	select {
	case err := <-result:
		return err // fenced: the manager stops
	case <-ctx.Done():
	}
	// The member renews on while the engine stops, marked as stopping:
	// nothing new goes to it meanwhile.
	m.member.BeginStop()
	for _, f := range m.after {
		select {
		case <-f.done:
		case err := <-result:
			return err // fenced while stopping: the Lease stays to expire
		}
	}
	stop()
	if err := <-result; err != nil {
		return err
	}
	if !m.idle() {
		m.log.Error(nil, "Daemons or handlers of this replica still run after its stop: its Lease is not released but left to expire, "+
			"so that the ring moves its objects only once this process has exited.", "lease", m.member.LeaseName())
		return nil
	}
	releasing, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	return m.member.Release(releasing)
}

// releaseTimeout bounds the release of the Lease after a graceful stop;
// a release that fails leaves the Lease to expire.
const releaseTimeout = 10 * time.Second

// whileThawed runs a runnable only while the operator is not frozen: a
// freeze stops it (its context ends), and the thaw starts it again. The
// assigner runs so, because a frozen ring writes nothing to objects, not
// even their owner labels.
type whileThawed struct {
	manager.Runnable
	toggle *freeze.Toggle
}

func (w whileThawed) NeedLeaderElection() bool { return false }

func (w whileThawed) Start(ctx context.Context) error {
	for {
		if err := w.toggle.WaitFor(ctx, false); err != nil {
			return nil
		}
		runCtx, cancel := context.WithCancel(ctx)
		watched := make(chan struct{})
		go func() {
			defer close(watched)
			if w.toggle.WaitFor(runCtx, true) == nil {
				cancel()
			}
		}()
		err := w.Runnable.Start(runCtx)
		cancel()
		<-watched // the freeze's watcher ends with the run, not after it
		if err != nil || ctx.Err() != nil {
			return err
		}
	}
}
