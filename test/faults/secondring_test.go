package faults

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kopf-go/kopf/test/faults/faultlog"
)

// secondRing runs, for hold, n replicas of a ring with the first ring's
// name and namespace but its Leases in leaseNS and a lower peering
// priority: another deployment of the operator, which must leave the
// first ring's objects alone. It returns the second ring's member names,
// seen in its Leases while it ran, for the check that none of them ever
// became a value of the first ring's owner label.
func (r *ring) secondRing(ctx context.Context, leaseNS string, n int, hold time.Duration) (map[string]bool, error) {
	second := newRing(r.t, r.name, r.ns, leaseNS, r.dir, r.log, r.timing)
	second.priority = -1
	r.mu.Lock()
	r.secondRings++
	nth := r.secondRings
	r.mu.Unlock()
	podIDs := make([]string, n)
	for i := range podIDs {
		podIDs[i] = fmt.Sprintf("second-%d-%d", nth, i)
	}
	id := r.log.Begin(faultlog.Entry{Kind: faultlog.SecondRing, Members: podIDs,
		Note: fmt.Sprintf("%d replicas, Leases in %s, priority -1", n, leaseNS)})
	var members []*member
	for _, podID := range podIDs {
		m, err := second.add(podID, 0, false)
		if err != nil {
			r.log.End(id, err.Error())
			return nil, err
		}
		members = append(members, m)
	}
	seen := map[string]bool{}
	deadline := time.Now().Add(hold)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if names, err := second.memberNames(ctx); err == nil {
			for name := range names {
				seen[name] = true
			}
		}
		sleep(ctx, 500*time.Millisecond)
	}
	for _, m := range members {
		stop, cancel := context.WithTimeout(ctx, terminationGrace)
		if _, err := m.Stop(stop); err != nil {
			_, _ = m.Kill()
		}
		cancel()
	}
	r.log.End(id, fmt.Sprintf("stopped; its members were %v", keys(seen)))
	return seen, nil
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// createPeering creates the namespace's KopfPeering "default", which
// both rings' replicas take part in (automatic peering), so that the
// second ring's lower priority can freeze it.
func createPeering(t testing.TB, ns string) {
	t.Helper()
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion("kopf.dev/v1")
	obj.SetKind("KopfPeering")
	obj.SetNamespace(ns)
	obj.SetName("default")
	if err := fixtures.env.Client.Create(context.Background(), obj); err != nil {
		t.Fatalf("create the KopfPeering: %v", err)
	}
}
