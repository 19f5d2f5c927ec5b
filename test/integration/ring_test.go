package integration

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/internal/ring"
)

// A ring member's Lease, as a real API server stores it: created with the
// ring's label, renewed (a new resourceVersion each time), and deleted on
// a graceful stop.
func TestRingMemberLease(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	m, err := ring.NewMember(env.Client, ring.Settings{
		Ring: "main", Namespace: ns, Identity: "kopf@test/20261201100000/abcde",
		LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RenewPeriod: 100 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	finished := make(chan error, 1)
	go func() { finished <- m.Start(ctx) }()
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			cancel()
			<-finished
		}
	})

	key := client.ObjectKey{Namespace: ns, Name: m.LeaseName()}
	lease := &coordinationv1.Lease{}
	eventually(t, "the Lease is created", func() bool { return env.Client.Get(context.Background(), key, lease) == nil })
	if got := lease.Labels[ring.RingLabel]; got != "main" {
		t.Errorf("ring label = %q, want main", got)
	}
	if got := *lease.Spec.LeaseDurationSeconds; got != 3 {
		t.Errorf("lease duration = %d s, want 3", got)
	}
	first := lease.ResourceVersion
	eventually(t, "the Lease is renewed", func() bool {
		now := &coordinationv1.Lease{}
		return env.Client.Get(context.Background(), key, now) == nil && now.ResourceVersion != first
	})

	cancel()
	stopped = true
	if err := <-finished; err != nil {
		t.Errorf("Start() = %v after a graceful stop, want nil", err)
	}
	if err := env.Client.Get(context.Background(), key, &coordinationv1.Lease{}); !apierrors.IsNotFound(err) {
		t.Errorf("the Lease is still there after the stop: %v", err)
	}
}
