package integration

import (
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/kopf-go/kopf/handlers"
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
	replica := func(identity string, seen *calls) *testenv.Operator {
		reg, kind := kex()
		handlers.OnCreate(kind, "create_fn", seen.record)
		return env.StartOperator(t, ns, reg, handlers.Options{Identity: identity}, leaderElection)
	}
	var first, second calls
	a := replica("replica-a", &first)
	eventually(t, "the first replica leads and registers", func() bool {
		_, ok := peers(t, ns, "default")["replica-a"]
		return ok
	})
	b := replica("replica-b", &second)
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
	for _, op := range []*testenv.Operator{a, b} {
		if n := len(op.Logs.Messages("Pausing")); n != 0 {
			t.Errorf("a replica paused %d times", n)
		}
	}
	if _, ok := peers(t, ns, "default")["replica-a"]; ok {
		t.Error("the old leader's record outlived it")
	}
}
