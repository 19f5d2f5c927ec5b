package ring

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kopf-go/kopf/internal/sharding"
)

// leaseAPI is what confirming a member's death needs of the ring's
// namespace's Leases.
type leaseAPI interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*coordinationv1.Lease, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// confirmDead asks the API server about every member whose Lease the
// liveness has seen expire. It returns the members it found dead, and
// those it could not ask (an API error), which count as live until it can.
//
// It deletes each such Lease on the condition that its resourceVersion is
// still the one last seen. One request proves that the member has not
// renewed since (a watch that fell behind could have missed a renewal,
// and counting a live member dead would break the guarantee), and clears
// the Lease of a member that will not come back, which would otherwise
// stay forever. A Lease that changed meanwhile counts as renewed now,
// unless the change was its member's release. A Lease deleted by someone
// else, whose deletion the watch showed, is dead once it has expired: its
// member fences itself at its next renewal, and at its renew deadline
// after the last renewal the watch showed at the latest. One whose
// deletion the watch did not show (it may be stuck, and have missed the
// last renewals too) counts as renewed when it is found gone, and is dead
// a lease duration later (Liveness.Vanished). A member that was only cut
// off and comes back finds its Lease gone and fences itself, as it would
// anyway.
func confirmDead(ctx context.Context, leases leaseAPI, ring string, live *sharding.Liveness, now time.Time) (dead, unconfirmed []string, err error) {
	var errs []error
	for member, version := range live.Expired(now) {
		name := leaseName(ring, member)
		err := leases.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &version}})
		if apierrors.IsConflict(err) {
			var lease *coordinationv1.Lease
			if lease, err = leases.Get(ctx, name, metav1.GetOptions{}); err == nil && !Released(lease) {
				live.Observe(member, lease.ResourceVersion, DeclaredDuration(lease), now)
				continue
			}
		}
		switch {
		case apierrors.IsNotFound(err) && !live.Vanished(member, now):
			continue // live a lease duration more
		case err == nil || apierrors.IsNotFound(err):
			live.Forget(member)
			dead = append(dead, member)
		default:
			unconfirmed = append(unconfirmed, member)
			errs = append(errs, fmt.Errorf("confirm that the member %s is dead: %w", member, err))
		}
	}
	slices.Sort(dead)
	slices.Sort(unconfirmed)
	return dead, unconfirmed, errors.Join(errs...)
}

// deleteReleased deletes Leases that their members released a while ago,
// each on the condition that it is still as released; a Lease that
// changed or went meanwhile is left to the next look.
func deleteReleased(ctx context.Context, leases leaseAPI, ring string, released map[string]string) error {
	var errs []error
	for member, version := range released {
		err := leases.Delete(ctx, leaseName(ring, member), metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &version}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			errs = append(errs, fmt.Errorf("delete the released Lease of %s: %w", member, err))
		}
	}
	return errors.Join(errs...)
}
