package managed

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	coordinationclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
)

// Wire names of the Leases that the replicas serving managed webhooks
// hold in their namespace.
const (
	// LeasePrefix starts the names of the writer's Lease
	// ("kopf-webhooks-<configuration>") and of the presence Leases
	// ("kopf-webhooks-<configuration>-<member>").
	LeasePrefix = "kopf-webhooks-"
	// ConfigurationLabel labels every presence Lease with the
	// configuration it serves, so that a replica finds the others by one
	// selector. The writer's Lease does not carry it.
	ConfigurationLabel = "webhooks.kopf.dev/configuration"
)

// Durations of the Leases: leader election's defaults, as the ring's.
const (
	// PresenceDuration is how long a presence Lease counts as live after
	// its last renewal; PresenceRenewal is how often it is renewed.
	PresenceDuration = 15 * time.Second
	PresenceRenewal  = 5 * time.Second
	// WriterLeaseDuration, WriterRenewDeadline and WriterRetryPeriod are
	// the writer's election's (client-go's leader election).
	WriterLeaseDuration = 15 * time.Second
	WriterRenewDeadline = 10 * time.Second
	WriterRetryPeriod   = 2 * time.Second
)

// LeaseBase is the configuration's part of its Leases' names and the
// value of their label: the configuration's name if it is a label value
// (at most 63 characters), else "h" and a hash of it.
func LeaseBase(configuration string) string {
	if len(validation.IsValidLabelValue(configuration)) == 0 && configuration != "" {
		return configuration
	}
	sum := sha256.Sum256([]byte(configuration))
	return "h" + hex.EncodeToString(sum[:8])
}

// WriterLease is the name of the Lease that elects the configuration's
// writer.
func WriterLease(configuration string) string { return LeasePrefix + LeaseBase(configuration) }

// PresenceLease is the name of one member's presence Lease.
func PresenceLease(configuration, member string) string {
	return LeasePrefix + LeaseBase(configuration) + "-" + member
}

// LivePresence returns the holders of the presence Leases that are live at
// now, but the one named self: renewed less than their declared duration
// ago, by the observer's clock. A Lease that declares no duration counts
// PresenceDuration; one never renewed counts from its creation.
func LivePresence(leases []coordinationv1.Lease, self string, now time.Time) []string {
	var live []string
	for i := range leases {
		l := &leases[i]
		if l.Name == self || !now.Before(presenceEnd(l)) {
			continue
		}
		live = append(live, ptr.Deref(l.Spec.HolderIdentity, l.Name))
	}
	slices.Sort(live)
	return live
}

// Abandoned returns the presence Leases that expired a whole duration ago
// or more: their holders stopped without dropping them (killed), and will
// not come back under those names. The writer deletes them.
func Abandoned(leases []coordinationv1.Lease, now time.Time) []coordinationv1.Lease {
	var out []coordinationv1.Lease
	for i := range leases {
		l := &leases[i]
		if end := presenceEnd(l); !now.Before(end.Add(declared(l))) {
			out = append(out, *l)
		}
	}
	return out
}

// presenceEnd is when a presence Lease stops counting as live.
func presenceEnd(l *coordinationv1.Lease) time.Time {
	renewed := l.CreationTimestamp.Time
	if l.Spec.RenewTime != nil {
		renewed = l.Spec.RenewTime.Time
	}
	return renewed.Add(declared(l))
}

// declared is a Lease's declared duration, PresenceDuration if none.
func declared(l *coordinationv1.Lease) time.Duration {
	if l.Spec.LeaseDurationSeconds == nil || *l.Spec.LeaseDurationSeconds <= 0 {
		return PresenceDuration
	}
	return time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
}

// presence is this replica's presence Lease: it says that the replica
// serves the configuration's webhooks, so that a replica that stops leaves
// them in place while another still serves them.
type presence struct {
	leases   coordinationclient.LeaseInterface
	name     string // the Lease's
	label    string // the configuration's label value
	identity string
	clock    clock.Clock

	mu    sync.Mutex
	lease *coordinationv1.Lease // as last written; nil before the join
}

// write creates the Lease, or renews it as last written. A Lease changed
// meanwhile (a hand edit) is read again and renewed; one deleted meanwhile
// (collected as abandoned after renewals failed for long) is created
// again: presence is no fence, the replica still serves.
func (p *presence) write(ctx context.Context) error {
	now := metav1.NewMicroTime(p.clock.Now())
	p.mu.Lock()
	last := p.lease
	p.mu.Unlock()
	var err error
	var written *coordinationv1.Lease
	if last != nil {
		written, err = p.leases.Update(ctx, p.claimed(last.DeepCopy(), now), metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			var fresh *coordinationv1.Lease
			if fresh, err = p.leases.Get(ctx, p.name, metav1.GetOptions{}); err == nil {
				written, err = p.leases.Update(ctx, p.claimed(fresh, now), metav1.UpdateOptions{})
			}
		}
	}
	if last == nil || apierrors.IsNotFound(err) {
		fresh := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: p.name}}
		fresh.Spec.AcquireTime = &now
		written, err = p.leases.Create(ctx, p.claimed(fresh, now), metav1.CreateOptions{})
	}
	if err != nil {
		return fmt.Errorf("write the presence Lease %s: %w", p.name, err)
	}
	p.mu.Lock()
	p.lease = written
	p.mu.Unlock()
	return nil
}

// claimed writes into a Lease what makes it this replica's presence.
func (p *presence) claimed(l *coordinationv1.Lease, now metav1.MicroTime) *coordinationv1.Lease {
	if l.Labels == nil {
		l.Labels = map[string]string{}
	}
	l.Labels[ConfigurationLabel] = p.label
	l.Spec.HolderIdentity = ptr.To(p.identity)
	l.Spec.LeaseDurationSeconds = ptr.To(int32(math.Ceil(PresenceDuration.Seconds())))
	l.Spec.RenewTime = &now
	return l
}

// drop deletes the Lease, if it was written, on the condition that it is
// still the one this replica created.
func (p *presence) drop(ctx context.Context) error {
	p.mu.Lock()
	last := p.lease
	p.lease = nil
	p.mu.Unlock()
	if last == nil {
		return nil
	}
	err := p.leases.Delete(ctx, p.name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &last.UID}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("delete the presence Lease %s: %w", p.name, err)
	}
	return nil
}

// list reads the configuration's presence Leases from the API server (not
// a cache: a replica that stops must see the others as they are now).
func (p *presence) list(ctx context.Context) ([]coordinationv1.Lease, error) {
	list, err := p.leases.List(ctx, metav1.ListOptions{LabelSelector: ConfigurationLabel + "=" + p.label})
	if err != nil {
		return nil, fmt.Errorf("list the presence Leases: %w", err)
	}
	return list.Items, nil
}

// others returns the holders of the other replicas' live presence Leases.
func (p *presence) others(ctx context.Context) ([]string, error) {
	leases, err := p.list(ctx)
	if err != nil {
		return nil, err
	}
	return LivePresence(leases, p.name, p.clock.Now()), nil
}

// collect deletes the abandoned presence Leases, each on the condition
// that it is unchanged since it was read; it returns how many it deleted.
func (p *presence) collect(ctx context.Context) (int, error) {
	leases, err := p.list(ctx)
	if err != nil {
		return 0, err
	}
	deleted := 0
	for _, l := range Abandoned(leases, p.clock.Now()) {
		rv := l.ResourceVersion
		err := p.leases.Delete(ctx, l.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &rv}})
		switch {
		case err == nil:
			deleted++
		case !apierrors.IsNotFound(err) && !apierrors.IsConflict(err):
			return deleted, fmt.Errorf("delete the abandoned presence Lease %s: %w", l.Name, err)
		}
	}
	return deleted, nil
}
