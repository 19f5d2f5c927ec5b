package ring

import (
	"context"
	"fmt"
	"slices"
	"strings"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kopf-go/kopf/pkg/keys"
)

// MembersAnnotation, on the ring's epoch Lease, lists the members that
// the assigner counts live, sorted and joined by commas. Every member
// hashes its objects over this one list, so that all of them agree on
// where an object belongs, and each hands over those that belong
// elsewhere (docs/sharding.md, "The ring's epoch").
const MembersAnnotation = keys.ShardPrefix + "/members"

// epochAPI is what publishing the ring's members needs of its namespace's
// Leases.
type epochAPI interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*coordinationv1.Lease, error)
	Create(ctx context.Context, lease *coordinationv1.Lease, opts metav1.CreateOptions) (*coordinationv1.Lease, error)
	Update(ctx context.Context, lease *coordinationv1.Lease, opts metav1.UpdateOptions) (*coordinationv1.Lease, error)
}

// publish writes the live members onto the ring's epoch Lease, creating
// it on a ring's first term; a list that is there already writes
// nothing. The update is guarded by the Lease's resourceVersion: of two
// assigners at once (one cut off, not yet aware), the one that read last
// writes, and the other's next change of members writes again. The epoch
// is not what keeps objects apart (the grant is): a member that hands an
// object to a member that died meanwhile hands it to nobody live, and
// the assigner places it again.
func publish(ctx context.Context, leases epochAPI, ring, identity string, live []string) error {
	want := strings.Join(live, ",")
	name := EpochLease(ring)
	lease, err := leases.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		lease = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{RingLabel: ring}}}
		lease.Annotations = map[string]string{MembersAnnotation: want}
		lease.Spec.HolderIdentity = ptr.To(identity)
		if _, err := leases.Create(ctx, lease, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("publish the ring's members on the Lease %s: %w", name, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("read the ring's epoch Lease %s: %w", name, err)
	case lease.Annotations[MembersAnnotation] == want && lease.Labels[RingLabel] == ring:
		return nil
	}
	lease = lease.DeepCopy()
	if lease.Annotations == nil {
		lease.Annotations = map[string]string{}
	}
	if lease.Labels == nil {
		lease.Labels = map[string]string{}
	}
	lease.Annotations[MembersAnnotation] = want
	lease.Labels[RingLabel] = ring
	lease.Spec.HolderIdentity = ptr.To(identity)
	if _, err := leases.Update(ctx, lease, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("publish the ring's members on the Lease %s: %w", name, err)
	}
	return nil
}

// Published are the members that an epoch Lease lists, sorted; none if it
// lists none (a ring without live members, or a Lease edited by hand).
func Published(lease *coordinationv1.Lease) []string {
	var out []string
	for m := range strings.SplitSeq(lease.Annotations[MembersAnnotation], ",") {
		if m = strings.TrimSpace(m); m != "" {
			out = append(out, m)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
