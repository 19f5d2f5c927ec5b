package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/kopf-go/kopf/handlers"
	"github.com/kopf-go/kopf/pkg/filter"
	"github.com/kopf-go/kopf/pkg/kopftest"
	"github.com/kopf-go/kopf/test/testenv"
)

// A freezing peer that stops renewing its record is dead once its lifetime
// is over: the operator resumes by itself and removes the dead record.
// Records are read as Kopf writes them, with "+00:00" or with "Z".
func TestFreezeEndsWhenThePeerExpires(t *testing.T) {
	for _, tc := range []struct{ name, format string }{
		{"python offset", "2006-01-02T15:04:05.000000-07:00"},
		{"zulu", "2006-01-02T15:04:05Z"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkLeaks(t)
			ns := env.Namespace(t)
			createPeering(t, ns, "default")
			reg, kind := kex()
			var seen calls
			handlers.OnCreate(kind, "create_fn", seen.record)
			op := env.StartOperator(t, ns, reg, handlers.Options{Identity: "go-operator"})
			// Two seconds from now, the record expires.
			setPeer(t, ns, "default", "python-operator", map[string]any{
				"priority": 100, "lifetime": 3, "lastseen": time.Now().Add(-time.Second).UTC().Format(tc.format)})
			eventually(t, "the operator freezes", func() bool {
				return len(op.Logs.Messages("Pausing operations in favour of [<Peer python-operator: priority=100, lifetime=3,")) == 1
			})
			create(t, exampleObject(t, ns))
			eventually(t, "the operator resumes after the expiry", func() bool {
				return op.Logs.Count("Resuming operations after the pause. Conflicting operators with the same priority are gone.") == 1 &&
					isHandled(t, ns, "kopf-example-1")
			})
			eventually(t, "the dead record is removed", func() bool {
				_, dead := peers(t, ns, "default")["python-operator"]
				return !dead
			})
		})
	}
}

// A live peer of the same priority freezes both (nobody serves), with a
// warning naming it.
func TestSamePriorityFreezesAll(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	createPeering(t, ns, "default")
	setPeer(t, ns, "default", "twin", kopfRecord(5, 60))
	reg, kind := kex()
	var seen calls
	handlers.OnCreate(kind, "create_fn", seen.record)
	w := &watches{resource: "kopfexamples"}
	op := env.StartOperator(t, ns, reg, handlers.Options{Identity: "go-operator", Priority: 5}, kopftest.WithConfig(w.config()))
	eventually(t, "the warning and the freeze", func() bool {
		return len(op.Logs.Messages("Possibly conflicting operators with the same priority: [<Peer twin: priority=5,")) > 0 &&
			len(op.Logs.Messages("Pausing all operators, including self: [")) == 1 && w.count() == 0
	})
	reads := w.read()
	create(t, exampleObject(t, ns))
	// A second twin comes after the object: once the operator warns of it,
	// it has handled an event later than the object's creation; frozen, it
	// has neither listed nor watched the kind since, so it cannot have
	// seen the object.
	setPeer(t, ns, "default", "twin-2", kopfRecord(5, 60))
	eventually(t, "the operator judges the second twin", func() bool {
		return len(op.Logs.Messages("<Peer twin-2: priority=5,")) > 0
	})
	if n := w.read() - reads; n != 0 || isHandled(t, ns, "kopf-example-1") {
		t.Fatalf("the frozen operator read the kind %d times since the freeze, and handled the object: %v", n, isHandled(t, ns, "kopf-example-1"))
	}
	setPeer(t, ns, "default", "twin-2", nil)
	setPeer(t, ns, "default", "twin", nil)
	eventually(t, "the operator serves once the twin is gone", func() bool { return isHandled(t, ns, "kopf-example-1") })
}

// Mandatory peering (--peering=NAME): without the peering object, the
// operator stays frozen; once it exists, its peers decide: frozen while
// one of higher priority lives, serving once none is left.
func TestMandatoryPeering(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	reg, kind := kex()
	var seen calls
	handlers.OnCreate(kind, "create_fn", seen.record)
	w := &watches{resource: "kopfexamples"}
	probes := testenv.FreeAddress(t)
	op := env.StartOperator(t, ns, reg, handlers.Options{Identity: "go-operator", Peering: "ours"}, kopftest.WithConfig(w.config()),
		kopftest.WithManagerOptions(func(o *manager.Options) { o.HealthProbeBindAddress = probes }))
	create(t, exampleObject(t, ns))
	eventually(t, "the operator waits, frozen", func() bool {
		return len(op.Logs.Messages("The operator starts frozen, and waits.")) == 1
	})
	// The peering object comes after the example object, with a peer of
	// higher priority in it: once the operator's readiness names the peer,
	// it has handled an event later than the object's creation, and it
	// stays frozen. It has neither listed nor watched the kind since it
	// started, so it cannot have seen the object.
	createPeeringWith(t, ns, "ours", map[string]any{"python-operator": kopfRecord(100, 60)})
	eventually(t, "the operator judges the peering object", func() bool {
		_, body := httpGetMaybe("http://" + probes + "/readyz/kopf-peering")
		return strings.Contains(body, "in favour of [<Peer python-operator: priority=100")
	})
	if n := w.read(); n != 0 || isHandled(t, ns, "kopf-example-1") {
		t.Fatalf("the operator read the kind %d times before the mandatory peering let it, and handled the object: %v", n, isHandled(t, ns, "kopf-example-1"))
	}
	setPeer(t, ns, "ours", "python-operator", nil)
	eventually(t, "the operator serves", func() bool { return isHandled(t, ns, "kopf-example-1") })
	eventually(t, "its record is in the peering object", func() bool {
		_, ok := peers(t, ns, "ours")["go-operator"]
		return ok
	})
}

// Standalone operators take no part: a peer of higher priority does not
// freeze them, and they write no record.
func TestStandaloneIgnoresPeers(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	createPeering(t, ns, "default")
	setPeer(t, ns, "default", "python-operator", kopfRecord(100, 60))
	reg, kind := kex()
	var seen calls
	handlers.OnCreate(kind, "create_fn", seen.record)
	env.StartOperator(t, ns, reg, handlers.Options{Identity: "go-operator", Standalone: true})
	create(t, exampleObject(t, ns))
	eventually(t, "the object is handled", func() bool { return isHandled(t, ns, "kopf-example-1") })
	if _, ok := peers(t, ns, "default")["go-operator"]; ok {
		t.Error("a standalone operator wrote a peer record")
	}
}

// Two operators of different priorities in one namespace: the higher one
// serves, the lower one is frozen; when the higher one exits (removing its
// record), the lower one takes over and handles what came meanwhile.
func TestTwoOperatorsByPriority(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	createPeering(t, ns, "default")
	var low, high calls
	lowReg, lowKind := kex()
	handlers.OnCreate(lowKind, "create_fn", low.record)
	highReg, highKind := kex()
	handlers.OnCreate(highKind, "create_fn", high.record)

	highOp := env.StartOperator(t, ns, highReg, handlers.Options{Identity: "high", Priority: 20})
	eventually(t, "the high one registers", func() bool {
		_, ok := peers(t, ns, "default")["high"]
		return ok
	})
	lowOp := env.StartOperator(t, ns, lowReg, handlers.Options{Identity: "low", Priority: 10})
	eventually(t, "the low one freezes in favour of the high one", func() bool {
		return len(lowOp.Logs.Messages("Pausing operations in favour of [<Peer high: priority=20,")) == 1
	})
	create(t, named(t, ns, "first"))
	eventually(t, "the high one handles it", func() bool { return isHandled(t, ns, "first") })
	if len(low.all()) != 0 {
		t.Errorf("the frozen operator handled %d objects", len(low.all()))
	}
	if len(highOp.Logs.Messages("Pausing")) != 0 {
		t.Error("the high-priority operator paused")
	}

	highOp.Stop(t)
	create(t, named(t, ns, "second"))
	eventually(t, "the low one takes over", func() bool {
		return isHandled(t, ns, "second") && len(low.of("create_fn")) == 1
	})
	if n := len(high.of("create_fn")); n != 1 {
		t.Errorf("the high one handled %d objects, want 1", n)
	}
}

// Cluster-wide operators use the ClusterKopfPeering.
func TestClusterWidePeering(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	name := "peering-" + ns // a peering object of this test's own
	createPeering(t, "", name)
	reg := handlers.NewRegistry()
	cluster := handlers.ForKind(reg, "kopf.dev", "v1", "ClusterKopfExample")
	var seen calls
	handlers.OnCreate(cluster, "create_fn", seen.record, handlers.Labels{"test": filter.Equals(ns)})
	op := env.StartOperator(t, ns, reg, handlers.Options{Identity: "go-operator", Peering: name, Namespaces: []string{}})
	eventually(t, "the record is in the cluster peering", func() bool {
		_, ok := peers(t, "", name)["go-operator"]
		return ok
	})
	setPeer(t, "", name, "other", kopfRecord(50, 60))
	eventually(t, "the operator freezes", func() bool {
		return len(op.Logs.Messages("Pausing operations in favour of [<Peer other: priority=50,")) == 1
	})
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kopf.dev/v1", "kind": "ClusterKopfExample",
		"metadata": map[string]any{"name": name, "labels": map[string]any{"test": ns}}, "spec": map[string]any{},
	}}
	create(t, obj)
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), obj) })
	setPeer(t, "", name, "other", nil)
	eventually(t, "the operator resumes and handles it", func() bool { return len(seen.of("create_fn")) == 1 })
}
