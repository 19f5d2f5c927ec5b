package managed

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/go-logr/logr"
)

// campaign runs one election for the writer's Lease until this replica
// has led and lost, or ctx ends; while it leads, it writes. When ctx
// ends, the replica leaves (see leave) while the election still runs, so
// that it can clean up as the writer; stopPresence is called first. The
// election runs under a context of its own, cancelled only then, so that
// the Lease is released (which lets another replica write at once) only
// when this one writes no more.
func (m *Configurations) campaign(ctx context.Context, p *presence, stopPresence func()) error {
	log := m.Logger.WithName("election")
	electing, stop := context.WithCancel(logr.NewContext(context.WithoutCancel(ctx), log))
	defer stop()
	// won is buffered: the elector's goroutine that reports the win
	// never waits for this one.
	won := make(chan context.Context, 1)
	el, err := leaderelection.NewLeaderElector(m.election(p, func(leading context.Context) { won <- leading }))
	if err != nil {
		return fmt.Errorf("elect the writer of the webhooks %s: %w", m.Config.Name, err)
	}
	ran := make(chan struct{})
	go func() {
		defer close(ran)
		el.Run(electing)
	}()
	defer func() {
		stop()
		<-ran
	}()
	var leading context.Context
	select {
	case <-ctx.Done():
	case <-ran: // lost before the term began
		return nil
	case leading = <-won:
		if err := m.lead(ctx, leading, p); err != nil || ctx.Err() == nil {
			return err // or the term is lost: campaign again
		}
	}
	stopPresence()
	m.leave(ctx, p, leading, won, ran)
	return nil
}

// lead runs one writer's term until ctx ends or the leadership is lost.
func (m *Configurations) lead(ctx, leading context.Context, p *presence) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(leading, cancel)()
	m.Logger.Info("This replica writes the webhook configurations.", "name", m.Config.Name, "identity", m.Identity)
	defer m.Logger.Info("This replica no longer writes the webhook configurations.", "name", m.Config.Name)
	return m.write(ctx, p)
}

// leave runs once ctx has ended: it drops the presence Lease, and if no
// other replica's presence is live, cleans up. The cleanup is written as
// the writer, the only one that writes: a replica that does not lead
// waits to win the running election first, so that no term of another
// writer comes between its look at the presence Leases and its cleanup
// (it looks again once it leads). A replica that appears meanwhile
// writes its presence before it campaigns, so either this look sees it,
// or its term begins after the cleanup and applies the configurations
// again. Everything is bounded by leaveTimeout; what cannot be done in
// time is logged, and the webhooks are left as they are.
func (m *Configurations) leave(ctx context.Context, p *presence, leading context.Context, won <-chan context.Context, ran <-chan struct{}) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), leaveTimeout)
	defer cancel()
	if err := p.drop(ctx); err != nil {
		m.Logger.Error(err, "The presence Lease could not be deleted; it expires on its own.", "lease", p.name)
	}
	if !m.alone(ctx, p) {
		return
	}
	if leading == nil || leading.Err() != nil {
		m.Logger.Info("This replica was the last to serve the webhooks; it waits to be the writer to clean up.", "name", m.Config.Name)
		select {
		case leading = <-won:
		case <-ran:
			m.Logger.Info("The election ended before this replica could clean up; the webhooks are left as they are.", "name", m.Config.Name)
			return
		case <-ctx.Done():
			m.Logger.Info("This replica could not become the writer in time to clean up; the webhooks are left as they are.",
				"name", m.Config.Name, "waited", leaveTimeout)
			return
		}
		if !m.alone(ctx, p) {
			return
		}
	}
	writing, stop := context.WithCancel(ctx)
	defer stop()
	defer context.AfterFunc(leading, stop)()
	if err := m.cleanUp(writing); err != nil {
		m.Logger.Error(err, "The webhooks could not be cleaned up; they are left as they are.")
		return
	}
	if others, err := p.others(writing); err == nil && len(others) > 0 {
		m.Logger.Info("A replica began to serve the webhooks during the cleanup; they are configured again.", "replicas", others)
		if _, err := m.sync(writing, watching); err != nil {
			m.Logger.Error(err, "The webhooks could not be configured again; the next writer does it.")
		}
	}
}

// alone reports whether no other replica's presence Lease is live; when
// that cannot be told, it says so and counts others as live (the webhooks
// stay, as a killed operator leaves them).
func (m *Configurations) alone(ctx context.Context, p *presence) bool {
	others, err := p.others(ctx)
	switch {
	case err != nil:
		m.Logger.Error(err, "Cannot tell whether other replicas serve the webhooks; they are left as they are.", "name", m.Config.Name)
		return false
	case len(others) > 0:
		m.Logger.Info("The webhooks stay: other replicas serve them.", "name", m.Config.Name, "replicas", others)
		return false
	}
	return true
}

// election is the configuration of one campaign for the writer's Lease.
// The candidate's identity is the presence Lease's name, unique to this
// process, so that two processes with one identity never both lead.
func (m *Configurations) election(p *presence, started func(context.Context)) leaderelection.LeaderElectionConfig {
	name := WriterLease(m.Config.Name)
	return leaderelection.LeaderElectionConfig{
		Lock: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: m.Namespace, Name: name},
			Client:     m.Clientset.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: m.Identity + "/" + p.name},
		},
		LeaseDuration:   WriterLeaseDuration,
		RenewDeadline:   WriterRenewDeadline,
		RetryPeriod:     WriterRetryPeriod,
		ReleaseOnCancel: true,
		Name:            name,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: started,
			OnStoppedLeading: func() {},
		},
	}
}
