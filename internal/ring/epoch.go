package ring

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kopf-go/kopf/internal/sharding"
	"github.com/kopf-go/kopf/pkg/keys"
)

// MembersAnnotation, on the ring's epoch Lease, lists the members that
// the assigner counts live, sorted and joined by commas. Every member
// hashes its objects over this one list, so that all of them agree on
// where an object belongs, and each hands over those that belong
// elsewhere (docs/sharding.md, "The ring's epoch").
const MembersAnnotation = keys.ShardPrefix + "/members"

// The rest of the epoch (sharding.Epoch), on the same Lease: its serial,
// the serial at which each live member joined, and the retired members
// (dead or departed, whose objects still carry their names and are
// adopted: docs/sharding.md, "Adoption") with the serial at which each
// was retired, as "name=serial" joined by commas.
const (
	SerialAnnotation  = keys.ShardPrefix + "/epoch"
	JoinedAnnotation  = keys.ShardPrefix + "/joined"
	RetiredAnnotation = keys.ShardPrefix + "/retired"
	// StoppedAnnotation records, as "name=serial", the members whose stop
	// the epoch records; HeldAnnotation, as "name:retired:serial=buckets",
	// the buckets of each retirement that each of them holds
	// (sharding.Epoch's Stopped and Held).
	StoppedAnnotation = keys.ShardPrefix + "/stopped"
	HeldAnnotation    = keys.ShardPrefix + "/held"
	// WrittenBeforeAnnotation holds, as "name=resourceVersion", a version
	// written a margin before each retirement (sharding.Epoch's
	// WrittenBefore).
	WrittenBeforeAnnotation = keys.ShardPrefix + "/written-before"
	// AssignerAnnotation names the member whose replica published the
	// epoch (sharding.Epoch's Assigner).
	AssignerAnnotation = keys.ShardPrefix + "/assigner"
	// SilentAnnotation lists the live members whose Leases the assigner
	// has seen go unrenewed for one and a half renew periods, joined by
	// commas: each member collects its garbage then, before a takeover
	// would start their objects (OnSilent). Only the candidates follow
	// the members' Leases, so the assigner tells the rest. It is no part
	// of the epoch.
	SilentAnnotation = keys.ShardPrefix + "/silent"
)

// epochAPI is what publishing the ring's members needs of its namespace's
// Leases.
type epochAPI interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*coordinationv1.Lease, error)
	Create(ctx context.Context, lease *coordinationv1.Lease, opts metav1.CreateOptions) (*coordinationv1.Lease, error)
	Update(ctx context.Context, lease *coordinationv1.Lease, opts metav1.UpdateOptions) (*coordinationv1.Lease, error)
}

// readEpoch is the epoch that the ring's Lease holds now (a zero one if
// there is none yet), and the Lease (nil if none).
func readEpoch(ctx context.Context, leases epochAPI, ring string) (sharding.Epoch, *coordinationv1.Lease, error) {
	lease, err := leases.Get(ctx, EpochLease(ring), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return sharding.Epoch{}, nil, nil
	case err != nil:
		return sharding.Epoch{}, nil, fmt.Errorf("read the ring's epoch Lease %s: %w", EpochLease(ring), err)
	}
	return Published(lease), lease, nil
}

// publish writes the epoch, and the members seen silent, onto the ring's
// epoch Lease, creating it on a ring's first term; an epoch that is there
// already writes nothing. The
// update is guarded by the Lease's resourceVersion: of two assigners at
// once (one cut off, not yet aware), the one that read last writes, and
// the other's next change of members writes again.
//
// The live members are not what keeps objects apart (the grant is): a
// member that hands an object to a member that died meanwhile hands it to
// nobody live, and the assigner places it again. The retired members are:
// their objects' adopters work on them on the epoch's word, so a member
// is retired only once the assigner counts it dead, as it moved its
// objects before (docs/sharding.md, "Adoption").
func publish(ctx context.Context, leases epochAPI, ring, identity string, e sharding.Epoch, silent []string) error {
	want := epochAnnotations(e)
	want[SilentAnnotation] = strings.Join(silent, ",")
	name := EpochLease(ring)
	_, lease, err := readEpoch(ctx, leases, ring)
	switch {
	case err != nil:
		return err
	case lease == nil:
		lease = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{RingLabel: ring}}}
		lease.Annotations = want
		lease.Spec.HolderIdentity = ptr.To(identity)
		if _, err := leases.Create(ctx, lease, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("publish the ring's members on the Lease %s: %w", name, err)
		}
		return nil
	case lease.Labels[RingLabel] == ring && annotationsHold(lease.Annotations, want):
		return nil
	}
	lease = lease.DeepCopy()
	if lease.Annotations == nil {
		lease.Annotations = map[string]string{}
	}
	if lease.Labels == nil {
		lease.Labels = map[string]string{}
	}
	maps.Copy(lease.Annotations, want)
	lease.Labels[RingLabel] = ring
	lease.Spec.HolderIdentity = ptr.To(identity)
	if _, err := leases.Update(ctx, lease, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("publish the ring's members on the Lease %s: %w", name, err)
	}
	return nil
}

// epochAnnotations are the annotations that hold an epoch.
func epochAnnotations(e sharding.Epoch) map[string]string {
	return map[string]string{
		MembersAnnotation: strings.Join(e.Members, ","),
		SerialAnnotation:  strconv.FormatInt(e.Serial, 10),
		JoinedAnnotation:  serials(e.Joined),
		RetiredAnnotation: serials(e.Retired),
		// Versions that do not read it hash over all the members:
		// safe, and only slower for what they place on a stopping one.
		StoppingAnnotation:      strings.Join(e.Stopping, ","),
		StoppedAnnotation:       serials(e.Stopped),
		HeldAnnotation:          heldBuckets(e.Held),
		WrittenBeforeAnnotation: versions(e.WrittenBefore),
		AssignerAnnotation:      e.Assigner,
	}
}

// versions writes "name=version" pairs, sorted by name.
func versions(m map[string]string) string {
	parts := make([]string, 0, len(m))
	for _, name := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, name+"="+m[name])
	}
	return strings.Join(parts, ",")
}

// heldBuckets writes what stopped members hold, sorted.
func heldBuckets(held map[string]map[sharding.Retirement]sharding.BucketSet) string {
	var parts []string
	for m, byRetirement := range held {
		for r, buckets := range byRetirement {
			parts = append(parts, fmt.Sprintf("%s:%s:%d=%s", m, r.Member, r.At, buckets.String()))
		}
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

// parseHeld reads what heldBuckets wrote; an entry that is not one is
// left out (an annotation edited by hand: its member then holds nothing
// of that retirement, and only a hand edit of the epoch can do that).
func parseHeld(s string) map[string]map[sharding.Retirement]sharding.BucketSet {
	out := map[string]map[sharding.Retirement]sharding.BucketSet{}
	for part := range strings.SplitSeq(s, ",") {
		key, value, ok := strings.Cut(strings.TrimSpace(part), "=")
		fields := strings.Split(key, ":")
		if !ok || len(fields) != 3 || fields[0] == "" || fields[1] == "" {
			continue
		}
		at, err := strconv.ParseInt(fields[2], 10, 64)
		if err != nil {
			continue
		}
		buckets, err := sharding.ParseBucketSet(value)
		if err != nil {
			continue
		}
		if out[fields[0]] == nil {
			out[fields[0]] = map[sharding.Retirement]sharding.BucketSet{}
		}
		out[fields[0]][sharding.Retirement{Member: fields[1], At: at}] = buckets
	}
	return out
}

// annotationsHold reports whether have holds every annotation of want.
func annotationsHold(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

// serials writes "name=serial" pairs, sorted by name.
func serials(m map[string]int64) string {
	parts := make([]string, 0, len(m))
	for _, name := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, name+"="+strconv.FormatInt(m[name], 10))
	}
	return strings.Join(parts, ",")
}

// parseSerials reads "name=serial" pairs; a pair that is not one is left
// out (an annotation edited by hand).
func parseSerials(s string) map[string]int64 {
	out := map[string]int64{}
	for pair := range strings.SplitSeq(s, ",") {
		name, serial, ok := strings.Cut(strings.TrimSpace(pair), "=")
		n, err := strconv.ParseInt(serial, 10, 64)
		if !ok || err != nil || name == "" {
			continue
		}
		out[name] = n
	}
	return out
}

// Published is the epoch that a Lease holds: its members sorted, none if
// it lists none (a ring without live members, or a Lease edited by hand).
// A member without a serial of joining (an epoch published before
// adoption) counts as joined at 0.
func Published(lease *coordinationv1.Lease) sharding.Epoch {
	members := parseNames(lease.Annotations[MembersAnnotation])
	var stopping []string
	for _, m := range parseNames(lease.Annotations[StoppingAnnotation]) {
		if slices.Contains(members, m) {
			stopping = append(stopping, m)
		}
	}
	serial, _ := strconv.ParseInt(lease.Annotations[SerialAnnotation], 10, 64)
	e := sharding.Epoch{Serial: serial, Members: members, Stopping: stopping,
		Joined: parseSerials(lease.Annotations[JoinedAnnotation]), Retired: parseSerials(lease.Annotations[RetiredAnnotation]),
		Version: lease.ResourceVersion, Assigner: lease.Annotations[AssignerAnnotation]}
	for pair := range strings.SplitSeq(lease.Annotations[WrittenBeforeAnnotation], ",") {
		name, version, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if ok && name != "" && version != "" && e.IsRetired(name) {
			if e.WrittenBefore == nil {
				e.WrittenBefore = map[string]string{}
			}
			e.WrittenBefore[name] = version
		}
	}
	// Records of members that are gone (left by an assigner of a version
	// before them) say nothing.
	held := parseHeld(lease.Annotations[HeldAnnotation])
	for m, at := range parseSerials(lease.Annotations[StoppedAnnotation]) {
		if !slices.Contains(members, m) {
			continue
		}
		if e.Stopped == nil {
			e.Stopped, e.Held = map[string]int64{}, map[string]map[sharding.Retirement]sharding.BucketSet{}
		}
		e.Stopped[m] = at
		if len(held[m]) > 0 {
			e.Held[m] = held[m]
		}
	}
	return e
}

// parseNames reads names joined by commas, sorted and each once; none
// for an empty list.
func parseNames(s string) []string {
	var names []string
	for m := range strings.SplitSeq(s, ",") {
		if m = strings.TrimSpace(m); m != "" {
			names = append(names, m)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}
