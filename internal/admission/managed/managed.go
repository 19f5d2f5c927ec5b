// Package managed keeps the webhook configurations of the operator's
// admission handlers in the cluster (docs/admission.md): applied with
// server-side apply under the field manager kopf-go, applied again on
// drift by one writer elected among the replicas, whose presence Leases
// say who serves, so that the last to stop cleans up.
package managed

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/kopf-go/kopf/internal/admission"
	"github.com/kopf-go/kopf/internal/sharding"
)

// DefaultRetryInterval is how often Configurations retries a failed write, or
// looks again for kinds the API server did not serve yet.
const DefaultRetryInterval = 10 * time.Second

// leaveTimeout bounds what a replica does after it was told to stop: drop
// its presence, and if it was the last to serve, become the writer and
// clean up. It is long enough to take the writer's Lease over from a
// writer that was killed (a lease duration and two retries), and short of
// a manager's graceful shutdown timeout (30 s by default).
const leaveTimeout = WriterLeaseDuration + 2*WriterRetryPeriod + time.Second

// Configurations keeps a ValidatingWebhookConfiguration and a
// MutatingWebhookConfiguration, both named admission.Config.Name, in line with the
// handlers, with server-side apply under FieldManager, once the webhook
// server serves. It is a manager.Runnable that runs on every replica
// (webhooks are served by all of them).
//
// With a Namespace, the replicas coordinate through Leases there
// (docs/admission.md, "With several replicas"): each holds a presence
// Lease while it serves; one of them, elected through the writer's Lease,
// applies the configurations and applies them again whenever they drift;
// a replica that stops cleans up (leaves only the persistent handlers'
// webhooks) only if no other replica's presence is live, and only as the
// writer. Without a Namespace (one process in development), the process
// writes alone and cleans up when it stops.
type Configurations struct {
	Config   admission.Config
	Registry *admission.Registry
	// Clientset writes and watches the configurations, and the Leases.
	Clientset kubernetes.Interface
	// Mapper finds the kinds' resources (plurals).
	Mapper meta.RESTMapper
	// Ready returns nil once the webhook server serves; the configurations
	// are not touched before, so that the API server does not call a
	// server that is not there.
	Ready func() error
	// Namespace holds the replicas' Leases; empty: this process writes the
	// configurations alone.
	Namespace string
	// Identity names this replica in the Leases: unique per replica
	// ($POD_ID where set, as peering and the ring name replicas).
	Identity string
	// RetryInterval: DefaultRetryInterval if zero.
	RetryInterval time.Duration
	Logger        logr.Logger

	serving atomic.Bool
	wrote   atomic.Bool

	// mu guards known: the resources of the kinds as the mapper last told
	// them (resources).
	mu    sync.Mutex
	known map[*admission.Kind]schema.GroupVersionResource
}

// NeedLeaderElection is false: every replica serves webhooks; the writer
// is elected among them by a Lease of their own.
func (m *Configurations) NeedLeaderElection() bool { return false }

// Serving returns nil once this replica counts among those that serve the
// webhooks (its presence Lease is written; alone, once its server
// serves): a readiness check, so that a rolling update does not stop an
// old replica before the new one counts.
func (m *Configurations) Serving() error {
	if m.serving.Load() {
		return nil
	}
	return fmt.Errorf("the replica does not serve the webhooks %s yet", m.Config.Name)
}

func (m *Configurations) interval() time.Duration {
	if m.RetryInterval == 0 {
		return DefaultRetryInterval
	}
	return m.RetryInterval
}

// Start waits for the webhook server, then keeps the configurations until
// ctx ends, alone or among replicas; then it cleans up if it should. It
// returns an error for a write that retrying cannot mend (forbidden,
// invalid) and for a failed cleanup of a process alone.
func (m *Configurations) Start(ctx context.Context) error {
	if !m.waitReady(ctx) {
		return nil
	}
	if m.Namespace == "" {
		return m.runAlone(ctx)
	}
	return m.runReplicated(ctx)
}

// runAlone is one process's writing, as in development: no Leases.
func (m *Configurations) runAlone(ctx context.Context) error {
	m.Logger.Info("This process writes the webhook configurations alone: no namespace is known for the replicas' Leases.",
		"name", m.Config.Name)
	m.serving.Store(true)
	if err := m.write(ctx, nil); err != nil {
		return err
	}
	if !m.wrote.Load() {
		return nil
	}
	leaving, cancel := context.WithTimeout(context.WithoutCancel(ctx), leaveTimeout)
	defer cancel()
	return m.cleanUp(leaving)
}

// cleanUp leaves only the persistent handlers' webhooks.
func (m *Configurations) cleanUp(ctx context.Context) error {
	m.Logger.Info(fmt.Sprintf("Cleaning up the admission webhooks %s.", m.Config.Name))
	if _, err := m.sync(ctx, cleaning); err != nil {
		return fmt.Errorf("clean up the webhooks %s: %w", m.Config.Name, err)
	}
	return nil
}

// runReplicated is one replica's part among others: its presence, its
// campaigns for the writer's Lease, and its leaving.
func (m *Configurations) runReplicated(ctx context.Context) error {
	p, err := m.newPresence()
	if err != nil {
		return err
	}
	if joined, err := m.join(ctx, p); !joined {
		return err
	}
	renewing, stopRenewing := context.WithCancel(ctx)
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		m.renew(renewing, p)
	}()
	// The renewal ends before the presence is dropped, so that it cannot
	// write the Lease again; on a fatal error as well.
	stop := func() {
		stopRenewing()
		<-renewed
	}
	for ctx.Err() == nil {
		if err := m.campaign(ctx, p, stop); err != nil {
			// This replica stops serving: it says so, and leaves the
			// webhooks to the others.
			stop()
			dropping, cancel := context.WithTimeout(context.WithoutCancel(ctx), leaveTimeout)
			defer cancel()
			return errors.Join(err, p.drop(dropping))
		}
	}
	stop()
	return nil
}

// newPresence prepares the replica's presence Lease, under a name of this
// process's own.
func (m *Configurations) newPresence() (*presence, error) {
	random := make([]byte, 8)
	if _, err := rand.Read(random); err != nil {
		return nil, fmt.Errorf("draw the replica's incarnation: %w", err)
	}
	identity := m.Identity
	if identity == "" {
		return nil, errors.New("a replica that serves managed webhooks among others needs an identity")
	}
	member := sharding.MemberName(identity, hex.EncodeToString(random))
	return &presence{
		leases: m.Clientset.CoordinationV1().Leases(m.Namespace),
		name:   PresenceLease(m.Config.Name, member), label: LeaseBase(m.Config.Name),
		identity: identity, clock: clock.RealClock{},
	}, nil
}

// join writes the presence Lease, retrying until it succeeds (true) or ctx
// ends (false). A refusal by the RBAC is an error: without the Leases'
// Role, the replica would never be ready.
func (m *Configurations) join(ctx context.Context, p *presence) (bool, error) {
	for {
		err := p.write(ctx)
		switch {
		case err == nil:
			m.serving.Store(true)
			m.Logger.Info("This replica serves the webhooks; its presence Lease is written.",
				"name", m.Config.Name, "namespace", m.Namespace, "lease", p.name)
			return true, nil
		case apierrors.IsForbidden(err):
			return false, fmt.Errorf("serve the webhooks %s among replicas (the Leases' RBAC: config/rbac/webhooks.yaml): %w", m.Config.Name, err)
		case ctx.Err() != nil:
			return false, nil
		}
		m.Logger.Error(err, "Could not write the presence Lease; trying again.", "namespace", m.Namespace, "lease", p.name)
		if !sleep(ctx, PresenceRenewal/5) {
			return false, nil
		}
	}
}

// renew renews the presence Lease every renewal period until ctx ends; a
// failed renewal is tried again after a fifth of it.
func (m *Configurations) renew(ctx context.Context, p *presence) {
	next := PresenceRenewal
	for sleep(ctx, next) {
		next = PresenceRenewal
		if err := p.write(ctx); err != nil && ctx.Err() == nil {
			m.Logger.Error(err, "Could not renew the presence Lease; trying again.", "lease", p.name)
			next = PresenceRenewal / 5
		}
	}
}

// waitReady polls Ready until it passes; false if ctx ends first.
func (m *Configurations) waitReady(ctx context.Context) bool {
	if m.Ready == nil {
		return ctx.Err() == nil
	}
	poll := 100 * time.Millisecond
	for waited := time.Duration(0); ; waited += poll {
		err := m.Ready()
		if err == nil {
			return true
		}
		if waited >= m.interval() {
			m.Logger.Info("Waiting for the webhook server", "reason", err.Error())
			waited = 0
		}
		if !sleep(ctx, poll) {
			return false
		}
	}
}

// sleep waits for d; false if ctx ends first.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
