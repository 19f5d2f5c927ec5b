package ring

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kopf-go/kopf/internal/keys"
)

// maxRing bounds ring names: a ring's name is part of its Leases' names
// and of the owner label's and handover annotation's keys, whose name
// part may hold 63 characters, "-next" included.
const maxRing = 40

// leasePrefix starts the name of every Lease of sharding: the assigner's
// is the prefix and the ring, a member's adds its name.
const leasePrefix = "kopf-shard-"

// OwnerLabel is the key of the label that names an object's owner in the
// ring; its value is a member name.
func OwnerLabel(ring string) string { return keys.ShardPrefix + "/" + ring }

// NextAnnotation is the key of the annotation by which the assigner asks
// an object's owner to hand the object over; its value is the next
// member's name.
func NextAnnotation(ring string) string { return keys.ShardPrefix + "/" + ring + "-next" }

// AssignerLease is the name of the Lease that elects the ring's assigner.
func AssignerLease(ring string) string { return leasePrefix + ring }

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
