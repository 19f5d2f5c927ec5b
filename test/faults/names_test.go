package faults

import (
	"github.com/kopf-go/kopf/handlers"
	shardring "github.com/kopf-go/kopf/internal/ring"
)

// wireNames are the library's names on the cluster that the suite reads
// and writes. They are in this one function because they are the
// library's API and change with it: the owner label's key is namespaced
// by the Leases' namespace (e.g. kopf-system.shard.kopf.dev/main).
type wireNames struct {
	// ownerLabel is the key of the label naming an object's owner, and
	// grantAnnotation the key of the annotation naming the member the
	// ring gave it to.
	ownerLabel, grantAnnotation string
	// memberLeasePrefix starts every member Lease's name; the rest is the
	// member's name, the owner label's value.
	memberLeasePrefix string
	// ringLabel labels the member Leases with the ring's name.
	ringLabel string
	// assignerLease is the Lease that elects the ring's assigner, and
	// epochLease the one on which the assigner publishes the members.
	assignerLease, epochLease string
}

func ringWireNames(leaseNS, ring string) wireNames {
	return wireNames{
		ownerLabel:        handlers.ShardOwnerLabel(leaseNS, ring),
		grantAnnotation:   handlers.ShardGrantAnnotation(leaseNS, ring),
		memberLeasePrefix: "kopf-shard-" + ring + "-",
		ringLabel:         "shard.kopf.dev/ring",
		assignerLease:     "kopf-shard-" + ring,
		epochLease:        shardring.EpochLease(ring),
	}
}
