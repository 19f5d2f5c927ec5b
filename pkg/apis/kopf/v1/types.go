// Package v1 holds the Go types of the kopf.dev/v1 peering kinds:
// KopfPeering (namespaced) and ClusterKopfPeering (cluster-scoped), in the
// shape Python Kopf uses, so that Go and Python operators see each other.
//
// +groupName=kopf.dev
package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is kopf.dev/v1.
var GroupVersion = schema.GroupVersion{Group: "kopf.dev", Version: "v1"}

// The kinds' resource names.
const (
	KopfPeeringResource        = "kopfpeerings"
	ClusterKopfPeeringResource = "clusterkopfpeerings"
)

// Peer is one operator's record in a peering object's status: its
// priority, how long the record is valid, and when it was written. A nil
// Peer (JSON null) is a record being removed.
type Peer struct {
	Priority int `json:"priority"`
	// Lifetime in seconds; a record without one counts as 60 seconds.
	Lifetime *int `json:"lifetime,omitempty"`
	// LastSeen is an ISO 8601 time (Kopf writes microseconds and "+00:00";
	// "Z" is read too).
	LastSeen string `json:"lastseen,omitempty"`
	// Message says why a peer froze the others (written by `kopf freeze`).
	Message string `json:"message,omitempty"`
	// Ring names the shard ring of a kopf-go replica (docs/sharding.md):
	// replicas of one ring share the objects and do not freeze each
	// other. Kopf ignores the field, as it ignores any field it does not
	// know.
	Ring string `json:"ring,omitempty"`
}

// KopfPeering is the peering object of operators that serve a namespace.
type KopfPeering struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// Status maps peer identities to their records.
	Status map[string]*Peer `json:"status,omitempty"`
}

// KopfPeeringList is a list of KopfPeerings.
type KopfPeeringList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []KopfPeering `json:"items"`
}

// ClusterKopfPeering is the peering object of cluster-wide operators.
type ClusterKopfPeering struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// Status maps peer identities to their records.
	Status map[string]*Peer `json:"status,omitempty"`
}

// ClusterKopfPeeringList is a list of ClusterKopfPeerings.
type ClusterKopfPeeringList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterKopfPeering `json:"items"`
}

// AddToScheme registers the kinds in a scheme.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &KopfPeering{}, &KopfPeeringList{}, &ClusterKopfPeering{}, &ClusterKopfPeeringList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
