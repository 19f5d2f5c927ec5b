package ring

import (
	"context"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kopf-go/kopf/internal/sharding"
)

// The members are published on one Lease of the ring, found by the ring's
// label; publishing the same members again writes nothing.
func TestPublish(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset()
	leases := cs.CoordinationV1().Leases("ops")
	if err := publish(ctx, leases, "main", identity, sharding.Epoch{Members: []string{"m1", "m2"}}, nil); err != nil {
		t.Fatal(err)
	}
	lease, err := leases.Get(ctx, EpochLease("main"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if lease.Labels[RingLabel] != "main" || lease.Annotations[MembersAnnotation] != "m1,m2" {
		t.Errorf("the epoch Lease = %v %v, want the ring's label and m1,m2", lease.Labels, lease.Annotations)
	}
	if diff := cmp.Diff([]string{"m1", "m2"}, Published(lease).Members); diff != "" {
		t.Errorf("Published() -want +got:\n%s", diff)
	}
	if _, ok := MemberOfLease("main", lease.Name); ok {
		t.Errorf("the epoch Lease %s counts as a member's", lease.Name)
	}
	writes := len(cs.Actions())
	if err := publish(ctx, leases, "main", identity, sharding.Epoch{Members: []string{"m1", "m2"}}, nil); err != nil {
		t.Fatal(err)
	}
	if n := len(cs.Actions()) - writes; n != 1 {
		t.Errorf("publishing the same members again took %d requests, want 1 (the read)", n)
	}
	if err := publish(ctx, leases, "main", identity, sharding.Epoch{Members: []string{"m2"}}, nil); err != nil {
		t.Fatal(err)
	}
	lease, _ = leases.Get(ctx, EpochLease("main"), metav1.GetOptions{})
	if got := lease.Annotations[MembersAnnotation]; got != "m2" {
		t.Errorf("after a member left the epoch lists %q, want m2", got)
	}
}

// The whole epoch comes back as it was published: its serial, when each
// member joined, and the retired members; a pair edited by hand into
// something else is left out.
func TestPublishedEpoch(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset()
	leases := cs.CoordinationV1().Leases("ops")
	want := sharding.Epoch{Serial: 7, Members: []string{"m1", "m3"}, Stopping: []string{"m3"},
		Joined: map[string]int64{"m1": 1, "m3": 6}, Retired: map[string]int64{"m2": 6, "m0": 3}, Assigner: "m1"}
	if err := publish(ctx, leases, "main", identity, want, []string{"m3"}); err != nil {
		t.Fatal(err)
	}
	lease, err := leases.Get(ctx, EpochLease("main"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := lease.Annotations[SilentAnnotation]; got != "m3" {
		t.Errorf("the silent members are written %q, want m3", got)
	}
	if got := lease.Annotations[RetiredAnnotation]; got != "m0=3,m2=6" {
		t.Errorf("the retired members are written %q, want m0=3,m2=6", got)
	}
	lease.ResourceVersion = "42" // the fake clientset keeps none
	want.Version = "42"          // the version of the Lease it was read from
	if diff := cmp.Diff(want, Published(lease)); diff != "" {
		t.Errorf("Published() -want +got:\n%s", diff)
	}
	lease.Annotations[RetiredAnnotation] = "m0=3,m2,=4,m5=x, m6=9 "
	if diff := cmp.Diff(map[string]int64{"m0": 3, "m6": 9}, Published(lease).Retired); diff != "" {
		t.Errorf("retired members edited by hand -want +got:\n%s", diff)
	}
	// Only members stop; an epoch of an earlier version has none.
	lease.Annotations[StoppingAnnotation] = "m9, m3,m1"
	if diff := cmp.Diff([]string{"m1", "m3"}, Published(lease).Stopping); diff != "" {
		t.Errorf("stopping members edited by hand -want +got:\n%s", diff)
	}
	delete(lease.Annotations, StoppingAnnotation)
	if got := Published(lease); len(got.Stopping) != 0 || !slices.Equal(got.Placing(), got.Members) {
		t.Errorf("an epoch without stopping members: %+v, placing %v", got, got.Placing())
	}
}

// A recorded stop comes back as published: when it was recorded, and the
// buckets of each retirement that its member holds; so does the version
// written before a retirement. Records of members that are gone (left by
// an assigner of a version before them) and entries edited by hand into
// something else are left out.
func TestPublishedStops(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset()
	leases := cs.CoordinationV1().Leases("ops")
	var some, others sharding.BucketSet
	some.Add("0")
	some.Add("1023")
	others.Add("512")
	want := sharding.Epoch{Serial: 9, Members: []string{"m1", "m3"}, Stopping: []string{"m3"},
		Joined: map[string]int64{"m1": 1, "m3": 1}, Retired: map[string]int64{"m2": 6, "m0": 3},
		Stopped: map[string]int64{"m3": 8}, WrittenBefore: map[string]string{"m2": "4711"},
		Held: map[string]map[sharding.Retirement]sharding.BucketSet{"m3": {{Member: "m2", At: 6}: some, {Member: "m0", At: 3}: others}}}
	if err := publish(ctx, leases, "main", identity, want, nil); err != nil {
		t.Fatal(err)
	}
	lease, err := leases.Get(ctx, EpochLease("main"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := lease.Annotations[StoppedAnnotation]; got != "m3=8" {
		t.Errorf("the stops are written %q, want m3=8", got)
	}
	if got := lease.Annotations[WrittenBeforeAnnotation]; got != "m2=4711" {
		t.Errorf("the versions before retirements are written %q, want m2=4711", got)
	}
	if diff := cmp.Diff(want, Published(lease)); diff != "" {
		t.Errorf("Published() -want +got:\n%s", diff)
	}

	lease.Annotations[StoppedAnnotation] = "m3=8,m7=2"
	lease.Annotations[WrittenBeforeAnnotation] = "m2=4711,m9=12,=5,m0"
	lease.Annotations[HeldAnnotation] += ",m3:m2=" + some.String() + ",m3:m4:x=" + some.String() + ",m3:m4:5=short,m7:m2:6=" + some.String()
	if diff := cmp.Diff(want, Published(lease)); diff != "" {
		t.Errorf("stops edited by hand -want +got:\n%s", diff)
	}
	// An epoch of a version before the record has none.
	delete(lease.Annotations, StoppedAnnotation)
	if got := Published(lease); got.Stopped != nil || got.Held != nil {
		t.Errorf("an epoch without stops: %v %v", got.Stopped, got.Held)
	}
}

// A list edited by hand is read as the set it names.
func TestPublishedTolerates(t *testing.T) {
	cs := fake.NewClientset()
	leases := cs.CoordinationV1().Leases("ops")
	_ = publish(context.Background(), leases, "main", identity, sharding.Epoch{Members: nil}, nil)
	lease, _ := leases.Get(context.Background(), EpochLease("main"), metav1.GetOptions{})
	if got := Published(lease).Members; len(got) != 0 {
		t.Errorf("no members published, read %v", got)
	}
	lease.Annotations[MembersAnnotation] = " m2, m1,,m2 "
	if diff := cmp.Diff([]string{"m1", "m2"}, Published(lease).Members); diff != "" {
		t.Errorf("Published() -want +got:\n%s", diff)
	}
}

// The assigner's selection: objects without an owner label, or whose
// label names no live member; none of a live member's.
func TestUnowned(t *testing.T) {
	k := KeysOf("ops", "main")
	for _, tt := range []struct {
		live  []string
		label map[string]string
		want  bool
	}{
		{[]string{"m1", "m2"}, nil, true},
		{[]string{"m1", "m2"}, map[string]string{k.Owner: "m3"}, true},
		{[]string{"m1", "m2"}, map[string]string{k.Owner: ""}, true},
		{[]string{"m1", "m2"}, map[string]string{k.Owner: "m2"}, false},
		{nil, nil, true},
		{nil, map[string]string{k.Owner: "m1"}, false},
	} {
		sel, err := k.Unowned(tt.live)
		if err != nil {
			t.Fatal(err)
		}
		if got := sel.Matches(labels.Set(tt.label)); got != tt.want {
			t.Errorf("Unowned(%v) = %s matches %v: %v, want %v", tt.live, sel, tt.label, got, tt.want)
		}
	}
}
