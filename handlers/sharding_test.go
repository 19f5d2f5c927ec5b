package handlers

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/kopf-go/kopf/internal/ring"
)

// The owner label and the grant are wire names: owner labels written by one version are
// read by the next, so the values are pinned.
func TestShardOwnerLabel(t *testing.T) {
	tests := []struct{ got, want string }{
		{ShardOwnerLabel("kopf-system", "main"), "kopf-system.shard.kopf.dev/main"},
		{ShardOwnerLabel("default", "e2e"), "default.shard.kopf.dev/e2e"},
		{ShardGrantAnnotation("kopf-system", "main"), "kopf-system.shard.kopf.dev/main-granted"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
	if !errors.Is(ring.ErrRenewDeadline, ErrShardMembershipLost) || !errors.Is(ring.ErrLeaseDeleted, ErrShardMembershipLost) {
		t.Error("the ways of losing a membership are not ErrShardMembershipLost")
	}
}

// ShardMembers maps the members of one ring to their replicas' identities,
// from the members' Leases: not another ring's, not the assigner's, not
// a released one.
func TestShardMembers(t *testing.T) {
	lease := func(name, ringName, holder string, annotations map[string]string) *coordinationv1.Lease {
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "ops", Name: name,
			Labels: map[string]string{ring.RingLabel: ringName}, Annotations: annotations},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(holder)}}
	}
	c := fake.NewClientBuilder().WithObjects(
		lease("kopf-shard-main-m000000000001", "main", "pod-1", nil),
		lease("kopf-shard-main-m000000000002", "main", "pod-2", nil),
		lease("kopf-shard-main-m000000000003", "main", "", map[string]string{ring.ReleasedAnnotation: "2026-12-01T10:00:00Z"}),
		lease("kopf-shard-main", "main", "pod-1", nil),
		lease("kopf-shard-other-m000000000004", "other", "pod-4", nil),
	).Build()
	got, err := ShardMembers(context.Background(), c, "ops", "main")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"m000000000001": "pod-1", "m000000000002": "pod-2"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ShardMembers() -want +got:\n%s", diff)
	}
}
