package sharding

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/kopf-go/kopf/internal/isotime"
	"github.com/kopf-go/kopf/pkg/kopftest"
)

// The members of a ring take part in peering without freezing each
// other; a peer of higher priority freezes every member (their daemons
// stop, nothing new is handled), and when it goes, every member resumes.
func TestPeeringFreezesTheWholeRing(t *testing.T) {
	kopftest.NoLeaks(t)
	r := newRing(t)
	r.peering = true
	peeringObj := &unstructured.Unstructured{}
	peeringObj.SetAPIVersion("kopf.dev/v1")
	peeringObj.SetKind("KopfPeering")
	peeringObj.SetNamespace(r.ns)
	peeringObj.SetName("default")
	if err := env.Client.Create(context.Background(), peeringObj); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b", "c"} {
		r.start(name)
	}
	names := r.createObjects(30)
	r.waitSettled(names, time.Minute) // the members, of one priority, do not freeze each other

	setPeer(t, r.ns, "admin@laptop", map[string]any{"priority": 100, "lifetime": 60, "lastseen": isotime.Format(time.Now())})
	for name, rep := range r.replicas {
		kopftest.Eventually(t, name+" pauses in favour of the peer", 30*time.Second, func() bool {
			return len(rep.op.Logs.Messages("Pausing operations in favour of [<Peer admin@laptop")) > 0
		})
	}
	kopftest.Eventually(t, "every daemon stops", 30*time.Second, func() bool {
		for _, name := range names {
			if len(r.det.daemonHosts(name)) > 0 {
				return false
			}
		}
		return true
	})
	reads := map[string]int{}
	for name, rep := range r.replicas {
		kopftest.Eventually(t, name+"'s watches of the kind end", 30*time.Second, func() bool { return rep.cut.openWatches() == 0 })
		reads[name] = rep.cut.read()
	}
	frozen := r.object("created-while-frozen")
	frozen.Object["spec"] = map[string]any{"field": "v0"}
	if err := env.Client.Create(context.Background(), frozen); err != nil {
		t.Fatal(err)
	}
	// A second peer comes after the object: once every replica's frozen
	// state names it, each has handled an event later than the object's
	// creation; frozen, none has listed or watched the kind since its
	// watches ended, so none (nor the assigner among them) can have seen
	// the object.
	setPeer(t, r.ns, "admin@desktop", map[string]any{"priority": 100, "lifetime": 60, "lastseen": isotime.Format(time.Now())})
	for name := range r.replicas {
		kopftest.Eventually(t, name+" judges the second peer", 30*time.Second, func() bool {
			return strings.Contains(frozenReason(t, identity(name)), "<Peer admin@desktop")
		})
	}
	for name, rep := range r.replicas {
		if n := rep.cut.read() - reads[name]; n != 0 {
			t.Errorf("%s, frozen, listed or watched the kind %d times", name, n)
		}
	}
	if got := r.det.creates("created-while-frozen"); len(got) > 0 {
		t.Errorf("an object created while the ring is frozen was handled on %v", got)
	}
	owner, _, _ := r.owners()
	if owner["created-while-frozen"] != "" {
		t.Errorf("an object created while the ring is frozen was assigned to %s", owner["created-while-frozen"])
	}

	setPeer(t, r.ns, "admin@desktop", nil)
	setPeer(t, r.ns, "admin@laptop", nil)
	r.waitSettled(append(names, "created-while-frozen"), time.Minute)
	kopftest.Eventually(t, "the object created during the freeze is handled", 30*time.Second, func() bool {
		return len(r.det.creates("created-while-frozen")) > 0
	})
	if got := r.det.creates("created-while-frozen"); len(got) != 1 {
		t.Errorf("after the freeze, the object created meanwhile was handled on %v, want once", got)
	}
	if o := r.det.overlapping(); len(o) > 0 {
		t.Errorf("overlapping executions: %v", o)
	}
}

// frozenReason is why the operator of this identity is frozen, as its
// kopf_operator_frozen metric says ("" if it is not).
func frozenReason(t *testing.T, id string) string {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "kopf_operator_frozen" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["identity"] == id && m.GetGauge().GetValue() == 1 {
				return labels["reason"]
			}
		}
	}
	return ""
}

// setPeer writes (or, with nil, removes) a peer record of another
// operator in the namespace's peering object.
func setPeer(t *testing.T, namespace, id string, record any) {
	t.Helper()
	raw, err := json.Marshal(map[string]any{"status": map[string]any{id: record}})
	if err != nil {
		t.Fatal(err)
	}
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion("kopf.dev/v1")
	obj.SetKind("KopfPeering")
	obj.SetNamespace(namespace)
	obj.SetName("default")
	if err := env.Client.Patch(context.Background(), obj, client.RawPatch(types.MergePatchType, raw)); err != nil {
		t.Fatalf("write the peer %s: %v", id, err)
	}
}
