package ring

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kopf-go/kopf/internal/sharding"
)

// The wire names of sharding, pinned: other replicas (and other versions)
// read them.
func TestWireNames(t *testing.T) {
	k := KeysOf("operators", "main")
	for got, want := range map[string]string{
		k.Owner:                 "operators.shard.kopf.dev/main",
		k.Granted:               "operators.shard.kopf.dev/main-granted",
		k.Next:                  "operators.shard.kopf.dev/main-next",
		k.Bucket:                "operators.shard.kopf.dev/main-bucket",
		BucketLabel("ns", "o"):  "997",
		AssignerLease("main"):   "kopf-shard-main",
		RingLabel:               "shard.kopf.dev/ring",
		IncarnationAnnotation:   "shard.kopf.dev/incarnation",
		ReleasedAnnotation:      "shard.kopf.dev/released",
		ID("operators", "main"): "operators/main",
	} {
		if got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
}

// An adopter's selection: the retired member's objects, but for the
// buckets adopted elsewhere; objects without a bucket label are in it.
func TestAdoptedFrom(t *testing.T) {
	k := KeysOf("ops", "main")
	sel := k.AdoptedFrom("m-r", []string{"1", "7"})
	for _, tt := range []struct {
		labels map[string]string
		want   bool
	}{
		{map[string]string{k.Owner: "m-r", k.Bucket: "3"}, true},
		{map[string]string{k.Owner: "m-r", k.Bucket: "7"}, false},
		{map[string]string{k.Owner: "m-r"}, true},
		{map[string]string{k.Owner: "m-r", k.Bucket: "junk"}, true},
		{map[string]string{k.Owner: "m-x", k.Bucket: "3"}, false},
	} {
		if got := sel.Matches(labels.Set(tt.labels)); got != tt.want {
			t.Errorf("%s matches %v: %v, want %v", sel, tt.labels, got, tt.want)
		}
	}
	if got, want := k.AdoptedFrom("m-r", nil).String(), "ops.shard.kopf.dev/main=m-r"; got != want {
		t.Errorf("the only adopter's selection is %q, want %q", got, want)
	}
}

func TestValidateRing(t *testing.T) {
	tests := []struct {
		ring string
		ok   bool
	}{
		{"main", true},
		{"shard-1", true},
		{strings.Repeat("a", 40), true},
		{strings.Repeat("a", 41), false},
		{"", false},
		{"Main", false},
		{"a.b", false},
		{"-main", false},
		{"main-", false},
		{"a/b", false},
	}
	for _, tt := range tests {
		err := ValidateRing(tt.ring)
		if (err == nil) != tt.ok {
			t.Errorf("ValidateRing(%q) = %v, want ok=%v", tt.ring, err, tt.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "Lease names and label keys") {
			t.Errorf("ValidateRing(%q) = %q, which does not say why", tt.ring, err)
		}
	}
}

// The longest valid ring's names, in the longest namespace, stay within
// Kubernetes' limits: keys of labels and annotations, and the Leases'
// names those of DNS subdomains.
func TestLongestRingFits(t *testing.T) {
	ring := strings.Repeat("r", 40)
	k := KeysOf(strings.Repeat("n", 63), ring)
	for _, key := range []string{k.Owner, k.Granted, k.Next, k.Bucket} {
		if errs := validation.IsQualifiedName(key); len(errs) > 0 {
			t.Errorf("the key %q is not valid: %v", key, errs)
		}
	}
	for _, lease := range []string{leaseName(ring, sharding.MemberName("x", "y")), AssignerLease(ring)} {
		if errs := validation.IsDNS1123Subdomain(lease); len(errs) > 0 {
			t.Errorf("the Lease name %q is not valid: %v", lease, errs)
		}
	}
}

func TestMemberOfLease(t *testing.T) {
	member := sharding.MemberName(identity, "1a2b")
	tests := []struct {
		name, lease string
		want        string
		ok          bool
	}{
		{"a member's Lease", leaseName("main", member), member, true},
		{"the assigner's Lease", AssignerLease("main"), "", false},
		{"another ring's", leaseName("other", member), "", false},
		{"no member part", "kopf-shard-main-", "", false},
		{"not a member name", "kopf-shard-main-a/b", "", false},
		{"not a ring's Lease", "kube-scheduler", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := MemberOfLease("main", tt.lease)
			if got != tt.want || ok != tt.ok {
				t.Errorf("MemberOfLease(main, %q) = %q, %v; want %q, %v", tt.lease, got, ok, tt.want, tt.ok)
			}
		})
	}
}

// A member of a ring with an invalid name is refused.
func TestMemberRefusesAnInvalidRing(t *testing.T) {
	s := Settings{Ring: "Main", Namespace: "operators", Identity: identity}
	if _, err := NewMember(nil, s); err == nil {
		t.Error("NewMember() accepted the ring name Main")
	}
}

// PlacementOf reads an unstructured object's labels and annotations in
// place, and gives what Placement gives from the copies, for objects with
// and without the keys, and for a typed object.
func TestPlacementOfReadsWhatPlacementReads(t *testing.T) {
	k := KeysOf("ns", "r")
	for _, tt := range []struct {
		name        string
		labels      map[string]string
		annotations map[string]string
	}{
		{name: "owned and granted", labels: map[string]string{k.Owner: "m-a", "other": "x"}, annotations: map[string]string{k.Granted: "m-b"}},
		{name: "an owner label only", labels: map[string]string{k.Owner: "m-a"}},
		{name: "neither", labels: map[string]string{"other": "x"}, annotations: map[string]string{"other": "y"}},
		{name: "no labels nor annotations"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			want := k.Placement(tt.labels, tt.annotations)
			u := &unstructured.Unstructured{Object: map[string]any{}}
			u.SetLabels(tt.labels)
			u.SetAnnotations(tt.annotations)
			if got := k.PlacementOf(u); got != want {
				t.Errorf("unstructured: %+v, want %+v", got, want)
			}
			typed := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Labels: tt.labels, Annotations: tt.annotations}}
			if got := k.PlacementOf(typed); got != want {
				t.Errorf("typed: %+v, want %+v", got, want)
			}
			if got, want := Label(u, k.Owner), tt.labels[k.Owner]; got != want || Label(typed, k.Owner) != want {
				t.Errorf("the owner label: unstructured %q, typed %q, want %q", got, Label(typed, k.Owner), want)
			}
		})
	}
	// A value that is no string (an object edited by a client that does
	// not validate) reads as none.
	u := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"labels": map[string]any{k.Owner: int64(3)}}}}
	if got := k.PlacementOf(u); got.Owner != "" {
		t.Errorf("a number as the owner label reads as %q, want none", got.Owner)
	}
}
