package ring

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kopf-go/kopf/internal/sharding"
	"github.com/kopf-go/kopf/pkg/keys"
)

// maxRing bounds ring names: a ring's name is part of its Leases' names
// and of the keys of the owner label and the annotations, whose name part
// may hold 63 characters, "-granted" included.
const maxRing = 40

// leasePrefix starts the name of every Lease of sharding: the assigner's
// is the prefix and the ring, a member's adds its name.
const leasePrefix = "kopf-shard-"

// Keys are the keys of one ring's label and annotations on the objects
// it shares. Their prefix carries the namespace of the ring's Leases: a
// ring is known by its namespace and its name, so two rings of one name
// in different namespaces (two deployments, a developer's run beside a
// deployment) keep apart instead of each counting the other's members
// dead and moving the objects back and forth.
type Keys struct {
	// Owner is the owner label: the member whose cache selects the
	// object.
	Owner string
	// Granted is the annotation naming the member that was given the
	// object by someone entitled to: the assigner, or the previous
	// owner's acknowledgement. A member works on an object only while
	// the owner label and the grant both name it, so an owner label
	// edited by hand starts nobody.
	Granted string
	// Next is the annotation by which assigners before the ring's
	// epoch asked the granted member to hand the object over; every write
	// of an owner removes it, and nothing reads it any more.
	Next string
	// Bucket is the label of the object's bucket (sharding.Bucket), which
	// every write of an owner sets: it lets each adopter of a retired
	// member's objects select its own buckets (docs/sharding.md,
	// "Adoption"). An object without it, or with a value that is no
	// bucket, is in every adopter's selection.
	Bucket string
}

// KeysOf are the keys of the ring of that name whose Leases live in that
// namespace: "<namespace>.shard.kopf.dev/<ring>", "-granted" and
// "-next" after it for the annotations, and "-bucket" for the bucket
// label.
func KeysOf(namespace, ring string) Keys {
	base := namespace + "." + keys.ShardPrefix + "/" + ring
	return Keys{Owner: base, Granted: base + "-granted", Next: base + "-next", Bucket: base + "-bucket"}
}

// Placement reads where an object stands in the ring from its labels and
// annotations.
func (k Keys) Placement(labels, annotations map[string]string) sharding.Placement {
	return sharding.Placement{Owner: labels[k.Owner], Granted: annotations[k.Granted]}
}

// PlacementOf is Placement for an object, read without copying its
// labels and annotations: an unstructured object's getters copy both
// maps, and a takeover asks it of tens of thousands of objects in one
// pass, whose garbage would slow everything else the replica does then.
func (k Keys) PlacementOf(obj metav1.Object) sharding.Placement {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return sharding.Placement{Owner: metadataValue(u.Object, "labels", k.Owner), Granted: metadataValue(u.Object, "annotations", k.Granted)}
	}
	return k.Placement(obj.GetLabels(), obj.GetAnnotations())
}

// Label is one label of an object, read in place as PlacementOf reads.
func Label(obj metav1.Object, key string) string {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return metadataValue(u.Object, "labels", key)
	}
	return obj.GetLabels()[key]
}

// metadataValue is one value of an unstructured object's labels or
// annotations (field), "" if it has none or it is not a string.
func metadataValue(object map[string]any, field, key string) string {
	metadata, _ := object["metadata"].(map[string]any)
	values, _ := metadata[field].(map[string]any)
	value, _ := values[key].(string)
	return value
}

// Unowned selects the objects whose owner label names none of the live
// members (or that have no owner label): new objects, those of members
// that left or died, and those whose label was edited to a name that is
// no member's. They are the only objects the assigner reads
// (docs/sharding.md, "The assigner").
func (k Keys) Unowned(live []string) (labels.Selector, error) {
	if len(live) == 0 {
		req, err := labels.NewRequirement(k.Owner, selection.DoesNotExist, nil)
		if err != nil {
			return nil, err
		}
		return labels.NewSelector().Add(*req), nil
	}
	req, err := labels.NewRequirement(k.Owner, selection.NotIn, live)
	if err != nil {
		return nil, fmt.Errorf("select the objects without a live owner: %w", err)
	}
	return labels.NewSelector().Add(*req), nil
}

// OwnedBy selects the objects whose owner label names the member.
func (k Keys) OwnedBy(member string) labels.Selector {
	return labels.SelectorFromSet(labels.Set{k.Owner: member})
}

// AdoptedFrom selects the objects of a retired member that an adopter may
// adopt: those whose owner label names the retired member and whose
// bucket label names none of the buckets adopted elsewhere. Objects
// without a bucket label are selected too (they are placed by a ring
// before the label, or edited by hand): the adopter keeps those of its
// buckets.
func (k Keys) AdoptedFrom(retired string, elsewhere []string) labels.Selector {
	sel := k.OwnedBy(retired)
	if len(elsewhere) == 0 {
		return sel
	}
	req, err := labels.NewRequirement(k.Bucket, selection.NotIn, elsewhere)
	if err != nil {
		return sel // the buckets are valid label values: this cannot fail
	}
	return sel.Add(*req)
}

// BucketLabel is the bucket label's value for the object, what every
// write of an owner sets: its bucket, the key it is hashed by
// (sharding.ObjectKey).
func BucketLabel(namespace, name string) string {
	return sharding.ObjectKey(namespace, name)
}

// ID names a ring in peering records and logs: its namespace and name.
func ID(namespace, ring string) string { return namespace + "/" + ring }

// AssignerLease is the name of the Lease that elects the ring's assigner.
func AssignerLease(ring string) string { return leasePrefix + ring }

// EpochLease is the name of the Lease on which the assigner publishes the
// ring's members: a dot keeps it apart from every member's Lease, and
// from the assigner's of any ring, since ring names hold no dots.
func EpochLease(ring string) string { return leasePrefix + ring + ".epoch" }

// leaseName is the name of a member's Lease.
func leaseName(ring, member string) string { return leasePrefix + ring + "-" + member }

// ValidateRing checks that a ring name can stand in Lease names and label
// keys: a DNS-1123 label of at most 40 characters.
func ValidateRing(ring string) error {
	errs := validation.IsDNS1123Label(ring)
	if len(ring) > maxRing {
		errs = append(errs, fmt.Sprintf("must be no more than %d characters", maxRing))
	}
	if len(errs) > 0 {
		return fmt.Errorf("the ring name %q is not valid, since it becomes part of Lease names and label keys: %s",
			ring, strings.Join(errs, "; "))
	}
	return nil
}

// MemberOfLease is the member whose Lease has the given name in the ring,
// and false for any other Lease (the assigner's, another ring's, or one
// whose member part is not a label value, so not a member name).
func MemberOfLease(ring, leaseName string) (string, bool) {
	member, ok := strings.CutPrefix(leaseName, leasePrefix+ring+"-")
	if !ok || member == "" || len(validation.IsValidLabelValue(member)) > 0 {
		return "", false
	}
	return member, true
}
