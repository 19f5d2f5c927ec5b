package handlers

import (
	"github.com/kopf-go/kopf/internal/ring"
	"github.com/kopf-go/kopf/internal/sharding"
)

// ShardMember is the name of the replica with the given identity in its
// ring, as the owner label and the member's Lease name it: a short hash of
// the identity ("m" and 12 hex digits), since identities (user@host/...)
// are not valid label values. A program that reads owner labels, or looks
// for a replica's Lease, maps the label back to a replica with it.
func ShardMember(identity string) string { return sharding.MemberName(identity) }

// ShardOwnerLabel is the key of the label that names an object's owner in
// the ring: "shard.kopf.dev/<ring>". Its value is a ShardMember. It selects
// a replica's objects (`kubectl get ... -l shard.kopf.dev/main=<member>`) or
// shows them all with their owners (`-L shard.kopf.dev/main`).
func ShardOwnerLabel(ringName string) string { return ring.OwnerLabel(ringName) }
