package reactor

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/kopf-go/kopf/internal/ring"
)

func shardObject(owner string, next string) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "ns", ResourceVersion: "42",
		Labels: map[string]string{"shard.kopf.dev/main": owner}}}
	if next != "" {
		cm.Annotations = map[string]string{"shard.kopf.dev/main-next": next}
	}
	return cm
}

// Only a requested handover to another member is one; the request stands
// beside the owner label, which only the owner moves.
func TestHandoverTo(t *testing.T) {
	s := newShard("main", "m-a")
	tests := []struct {
		name string
		obj  *corev1.ConfigMap
		want string
	}{
		{"no request", shardObject("m-a", ""), ""},
		{"a request to another member", shardObject("m-a", "m-b"), "m-b"},
		{"a request to this member itself (the ring changed back)", shardObject("m-a", "m-a"), ""},
		{"an object this member does not own", shardObject("m-c", "m-b"), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := s.handoverTo(tt.obj); got != tt.want {
				t.Errorf("handoverTo() = %q, want %q", got, tt.want)
			}
		})
	}
	var unsharded *shard
	if got := unsharded.handoverTo(shardObject("m-a", "m-b")); got != "" {
		t.Errorf("handoverTo() without sharding = %q, want none", got)
	}
}

// The acknowledgement moves the label and drops the request, guarded by
// the version the owner let go of.
func TestAcknowledgement(t *testing.T) {
	s := newShard("main", "m-a")
	want := map[string]any{"metadata": map[string]any{
		"resourceVersion": "42",
		"labels":          map[string]any{"shard.kopf.dev/main": "m-b"},
		"annotations":     map[string]any{"shard.kopf.dev/main-next": nil},
	}}
	if diff := cmp.Diff(want, s.acknowledgement(shardObject("m-a", "m-b"), "m-b")); diff != "" {
		t.Errorf("acknowledgement() -want +got:\n%s", diff)
	}
	sel := s.selector()
	if !sel.Matches(labels.Set{"shard.kopf.dev/main": "m-a"}) || sel.Matches(labels.Set{"shard.kopf.dev/main": "m-b"}) {
		t.Errorf("selector() = %s selects other members' objects or not its own", sel)
	}
}

// blocking is a runnable that runs until it is released after its stop.
type blocking struct{ release chan struct{} }

func (b *blocking) Start(ctx context.Context) error {
	<-ctx.Done()
	<-b.release
	return nil
}

// A graceful stop gives the Lease up only after the engine has stopped:
// the ring moves the objects at once when the Lease goes.
func TestMembershipLeavesAfterTheEngine(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	scheme := runtime.NewScheme()
	_ = coordinationv1.AddToScheme(scheme)
	c := fake.NewClientBuilder().WithScheme(scheme).Build()
	member, err := ring.NewMember(c, ring.Settings{Ring: "main", Namespace: "ops", Identity: "replica-1",
		RenewPeriod: 10 * time.Millisecond, RenewDeadline: time.Second, LeaseDuration: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	engine := newFinishing(&blocking{release: make(chan struct{})})
	m := &membership{member: member, after: []*finishing{engine}}
	ctx, cancel := context.WithCancel(context.Background())
	finished := make(chan error, 1)
	go func() { finished <- m.Start(ctx) }()
	go func() { _ = engine.Start(ctx) }()

	key := client.ObjectKey{Namespace: "ops", Name: member.LeaseName()}
	leaseExists := func() bool { return c.Get(context.Background(), key, &coordinationv1.Lease{}) == nil }
	for deadline := time.Now().Add(5 * time.Second); !leaseExists(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the member's Lease was not created")
		}
	}
	cancel()
	time.Sleep(50 * time.Millisecond) // several renew periods: time enough to leave too early
	if !leaseExists() {
		t.Fatal("the Lease was given up while the engine was still stopping")
	}
	close(engine.Runnable.(*blocking).release)
	if err := <-finished; err != nil {
		t.Errorf("Start() = %v, want nil after a graceful stop", err)
	}
	if err := c.Get(context.Background(), key, &coordinationv1.Lease{}); !apierrors.IsNotFound(err) {
		t.Errorf("the Lease is still there after the engine stopped: %v", err)
	}
}
