package conversion

import (
	"context"
	"fmt"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kopf-go/kopf/internal/conversion/managed"
	"github.com/kopf-go/kopf/pkg/kopftest"
)

// Two replicas run at once: one, elected through the Lease, writes; when
// it stops it releases the Lease, and the other takes it and repairs a
// drift made after the stop. The Lease's durations are the package's
// constants (client-go's defaults): the takeover after a release waits at
// most a retry period (2s, with jitter), well within the timeout.
func TestReplicasOneWriter(t *testing.T) {
	kopftest.NoLeaks(t)
	ns := env.Namespace(t)
	gk := newCRD(t, kindOf("ConvReplicas"))
	name := crdName(gk)
	cc := urlConfig(t)
	var seen [2]requests
	var cs [2]*managed.Conversions
	var rs [2]*running
	for i := range cs {
		cs[i] = conversions(t, seen[i].wrap(env.Config), cc, gk)
		cs[i].Namespace = ns
		cs[i].Identity = fmt.Sprintf("replica-%d", i)
		rs[i] = start(t, cs[i])
	}
	kopftest.Eventually(t, "one replica applies the conversion", timeout, func() bool {
		return webhookURL(get(t, name)) == hookURL && cs[0].Written()+cs[1].Written() > 0
	})
	holder := leaseHolder(t, ns)
	w := map[string]int{"replica-0": 0, "replica-1": 1}[holder]
	if holder != cs[w].Identity {
		t.Fatalf("the Lease %s is held by %q, not a replica", managed.Lease("auto.kopf.dev"), holder)
	}
	other := 1 - w
	// A drift while both run: the writer alone repairs it.
	patch(t, name, "kubectl-edit", `{"spec":{"conversion":{"strategy":"None","webhook":null}}}`)
	kopftest.Eventually(t, "the writer repairs the drift", timeout, func() bool { return webhookURL(get(t, name)) == hookURL })
	if cs[other].Written() != 0 || seen[other].patches.Load() != 0 {
		t.Fatalf("the replica that does not hold the Lease wrote: Written %d, %d PATCHes of the CRD", cs[other].Written(), seen[other].patches.Load())
	}
	if seen[w].patches.Load() < 2 {
		t.Errorf("the writer sent %d PATCHes of the CRD, want one per apply (2)", seen[w].patches.Load())
	}

	if err := rs[w].stop(t); err != nil {
		t.Fatalf("the writer's Start: %v", err)
	}
	patch(t, name, "kubectl-edit", `{"spec":{"conversion":{"strategy":"None","webhook":null}}}`)
	kopftest.Eventually(t, "the other replica takes the Lease and repairs the drift", timeout, func() bool {
		return webhookURL(get(t, name)) == hookURL
	})
	if got := leaseHolder(t, ns); got != cs[other].Identity {
		t.Errorf("the Lease is held by %q, want %q", got, cs[other].Identity)
	}
	if cs[other].Written() == 0 || seen[other].patches.Load() == 0 {
		t.Errorf("the repair after the stop was not the other replica's: Written %d, %d PATCHes", cs[other].Written(), seen[other].patches.Load())
	}
}

// leaseHolder is the holder of the writer's Lease in ns, "" if none.
func leaseHolder(t *testing.T, ns string) string {
	t.Helper()
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	var l *coordinationv1.Lease
	if l, err = cs.CoordinationV1().Leases(ns).Get(context.Background(), managed.Lease("auto.kopf.dev"), metav1.GetOptions{}); err != nil {
		t.Fatalf("read the writer's Lease: %v", err)
	}
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}
