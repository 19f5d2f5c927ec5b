package integration

import (
	"net/http"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/kopf-go/kopf/handlers"
	"github.com/kopf-go/kopf/pkg/kopftest"
	"github.com/kopf-go/kopf/test/testenv"
)

// Leader election (replicas of one operator) and peering (different
// operators) combine: only the replica holding the Lease runs the engine
// and takes part in peering, so replicas of the same priority do not
// freeze each other; when the leader goes, another replica takes over.
func TestLeaderElectionWithPeering(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	createPeering(t, ns, "default")
	leaderElection := func(o *manager.Options) {
		lease, renew, retry := 2*time.Second, time.Second, 200*time.Millisecond
		o.LeaderElection = true
		o.LeaderElectionID = "kopf-go-test"
		o.LeaderElectionNamespace = ns
		o.LeaseDuration, o.RenewDeadline, o.RetryPeriod = &lease, &renew, &retry
		o.LeaderElectionReleaseOnCancel = true
	}
	replica := func(identity string, seen *calls, tweaks ...kopftest.OperatorOption) *testenv.Operator {
		reg, kind := kex()
		handlers.OnCreate(kind, "create_fn", seen.record)
		return env.StartOperator(t, ns, reg, handlers.Options{Identity: identity}, append(tweaks, kopftest.WithManagerOptions(leaderElection))...)
	}
	probes := testenv.FreeAddress(t)
	serveProbes := func(o *manager.Options) { o.HealthProbeBindAddress = probes }
	var first, second calls
	a := replica("replica-a", &first)
	eventually(t, "the first replica leads and registers", func() bool {
		_, ok := peers(t, ns, "default")["replica-a"]
		return ok
	})
	b := replica("replica-b", &second, kopftest.WithManagerOptions(serveProbes))
	// A standby is ready: a rolling update must be able to bring it up
	// while the old replica holds the Lease.
	eventually(t, "the standby replica is ready", func() bool { return readyzStatus(probes) == http.StatusOK })
	create(t, named(t, ns, "one"))
	eventually(t, "the leader handles the object", func() bool { return isHandled(t, ns, "one") })
	if _, ok := peers(t, ns, "default")["replica-b"]; ok {
		t.Error("the follower wrote a peer record: replicas would freeze each other")
	}
	if len(first.all()) != 1 || len(second.all()) != 0 {
		t.Errorf("calls: leader %d, follower %d; want 1 and 0", len(first.all()), len(second.all()))
	}

	a.Stop(t)
	create(t, named(t, ns, "two"))
	eventually(t, "the other replica takes over", func() bool { return isHandled(t, ns, "two") && len(second.all()) == 1 })
	if code := readyzStatus(probes); code != http.StatusOK {
		t.Errorf("the new leader's readiness: %d, want 200", code)
	}
	for _, op := range []*testenv.Operator{a, b} {
		if n := len(op.Logs.Messages("Pausing")); n != 0 {
			t.Errorf("a replica paused %d times", n)
		}
	}
	if _, ok := peers(t, ns, "default")["replica-a"]; ok {
		t.Error("the old leader's record outlived it")
	}
}

// readyzStatus is the HTTP status of the engine's readiness check at the
// manager's probe address, 0 if it does not answer.
func readyzStatus(address string) int {
	resp, err := http.Get("http://" + address + "/readyz/kopf-peering")
	if err != nil {
		return 0
	}
	defer func() { _ = resp.Body.Close() }()
	return resp.StatusCode
}
