package handlers

import (
	"context"
	"fmt"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/internal/ring"
)

// ErrShardMembershipLost is what a sharded operator's manager returns
// (wrapped) once the replica has lost its ring membership: it could not
// renew its Lease within the renew deadline, or the Lease was deleted or
// taken over under it. Every handler and daemon was cancelled at that
// moment; the program must exit, as after lost leadership
// (docs/sharding.md, docs/embedding.md). The standalone runner exits with
// status 1 at once.
var ErrShardMembershipLost = ring.ErrMembershipLost

// ShardOwnerLabel is the key of the label that names an object's owner in
// the ring of that name whose Leases live in namespace:
// "<namespace>.shard.kopf.dev/<ring>". Its value is a member's name, which
// ShardMembers maps to replicas. It selects a replica's objects
// (`kubectl get ... -l kopf-system.shard.kopf.dev/main=<member>`) or shows
// them all with their owners (`-L kopf-system.shard.kopf.dev/main`).
func ShardOwnerLabel(namespace, ringName string) string {
	return ring.KeysOf(namespace, ringName).Owner
}

// ShardGrantAnnotation is the key of the annotation beside the owner
// label that names the member the ring gave the object to:
// "<namespace>.shard.kopf.dev/<ring>-granted". A member works on an object
// only while the owner label and this annotation both name it; the ring
// puts an owner label edited by hand back to the granted member.
func ShardGrantAnnotation(namespace, ringName string) string {
	return ring.KeysOf(namespace, ringName).Granted
}

// ShardMembers maps the names of a ring's members (the values of its
// owner labels) to the identities of the replicas that hold them, as the
// members' Leases in namespace say; a member name is a short hash, since
// identities (user@host/...) are not valid label values, and a new one
// for every run that does not take over an earlier run's Lease. Released
// Leases (members that left) are not listed.
func ShardMembers(ctx context.Context, c client.Reader, namespace, ringName string) (map[string]string, error) {
	var leases coordinationv1.LeaseList
	if err := c.List(ctx, &leases, client.InNamespace(namespace), client.MatchingLabels{ring.RingLabel: ringName}); err != nil {
		return nil, fmt.Errorf("list the Leases of the ring %q in %s: %w", ringName, namespace, err)
	}
	members := map[string]string{}
	for i := range leases.Items {
		lease := &leases.Items[i]
		member, ok := ring.MemberOfLease(ringName, lease.Name)
		if ok && !ring.Released(lease) {
			members[member] = ptr.Deref(lease.Spec.HolderIdentity, "")
		}
	}
	return members, nil
}
