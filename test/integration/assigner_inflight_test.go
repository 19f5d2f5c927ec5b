package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/kopf-go/kopf/internal/sharding"
)

// A placement that the assigner decided among members that included one
// lands before the epoch that retires that member: the retirement waits
// for the write in flight. Otherwise the object would take the member's
// name after the retirement, outside what its adopters adopted and what
// the check that drops a retired member saw, and the epoch could drop the
// member while an adopter works on the object (docs/sharding.md, "The
// assigner").
func TestAPlacementInFlightLandsBeforeItsOwnersRetirement(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	m1, _ := startMember(t, ns, "kopf@host-1", nil)
	m2, stop2 := startMember(t, ns, "kopf@host-2", nil)
	// A name that hashes to the member that will leave.
	name := ""
	for i := 0; name == ""; i++ {
		candidate := fmt.Sprintf("inflight-%02d", i)
		if sharding.Owner(sharding.ObjectKey(ns, candidate), names(m1, m2)) == m2.Name() {
			name = candidate
		}
	}
	hold := &heldPatches{name: name, started: make(chan struct{}), release: make(chan struct{})}
	defer hold.free()
	cfg := rest.CopyConfig(env.Config)
	cfg.WrapTransport = hold.wrap
	startAssignerOn(t, ns, "kopf@host-1", ringLease, clock.RealClock{}, cfg)
	eventually(t, "the epoch names both members", func() bool { return len(epochOf(t, ns).Members) == 2 })

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"test": "assigner"}}}
	if err := env.Client.Create(context.Background(), cm); err != nil {
		t.Fatal(err)
	}
	<-hold.started // the assigner's placement of the object, held in flight
	if err := stop2(); err != nil {
		t.Fatalf("the leaving member: Start() = %v", err)
	}
	// A leaver is retired at once: give the assigner a second to publish
	// the retirement while the placement is held.
	time.Sleep(time.Second)
	if e := epochOf(t, ns); e.IsRetired(m2.Name()) {
		t.Errorf("the epoch retired %s while a placement on it was in flight", m2.Name())
	}
	hold.free()
	eventually(t, "the leaver retired once the placement landed", func() bool { return epochOf(t, ns).IsRetired(m2.Name()) })
	if got := placements(t, ns)[name]; got.owner != m2.Name() {
		t.Errorf("%s is owned by %q, want %s, the placement that was in flight", name, got.owner, m2.Name())
	}
}
