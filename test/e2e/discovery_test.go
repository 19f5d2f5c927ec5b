package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kopf-go/kopf/test/faults/activity"
	"github.com/kopf-go/kopf/test/testenv"
)

// rediscovery is how long after a change of a CRD the operator asks
// discovery for the last time, and a second: it asks at once, 1 s and 4 s
// later (docs/scopes.md).
const rediscovery = 5 * time.Second

// A group whose discovery fails for a while (as an aggregated API that is
// down: the API server marks it stale) while the operator, a process
// reaching the API server through a proxy that injects the fault, runs a
// daemon on an object of that group. A change of another CRD makes the
// operator ask discovery again during the failure, and again after it.
// Nothing is forgotten: the daemon is never stopped, and the same run
// beats on through the failure and after it.
func TestDiscoveryFailureForgetsNothing(t *testing.T) {
	ns := env.Namespace(t)
	fault := startDiscoveryFault(t, "kopf.dev")
	records := filepath.Join(t.TempDir(), "records.jsonl")
	p, err := testenv.StartProcess(filepath.Join(binDir, "probe"),
		[]string{"--records=" + records, "--", "--standalone", "--verbose", "--namespace=" + ns},
		[]string{"KUBECONFIG=" + fault.kubeconfig(t), "POD_ID=discovery"})
	if err != nil {
		t.Fatal(err)
	}
	op := &operator{p}
	t.Cleanup(func() {
		p.Kill()
		t.Logf("the output of the probe:\n%s", p.Output())
	})
	testenv.Create(t, env.Client, exampleObject(t, ns))

	daemon := &daemonRecords{t: t, path: records}
	op.waitFor(t, "the daemon beats", func() bool { return daemon.beatAfter(time.Time{}) })
	run := daemon.runs()[0]

	// The failure, and a change of another CRD, which makes the operator
	// ask discovery at once, 1 s and 4 s later: it meets the stale group
	// each time. The daemon beats on past them all.
	fault.failing.Store(true)
	before := fault.stale.Load()
	kick := kickCRD()
	kicked := time.Now()
	testenv.Create(t, env.Client, kick)
	op.waitFor(t, "the daemon beats on while discovery fails", func() bool {
		return daemon.intact(run) && fault.stale.Load()-before >= 3 && daemon.beatAfter(kicked.Add(rediscovery))
	})
	op.waitForLine(t, "A group's discovery fails; its last known resources stay served until it answers again.")

	// The group answers again; another change of a CRD asks discovery.
	fault.failing.Store(false)
	if err := env.Client.Delete(context.Background(), kick); err != nil {
		t.Fatal(err)
	}
	op.waitFor(t, "the operator sees the group answer again", func() bool {
		return daemon.intact(run) && strings.Contains(op.Output(), "A group's discovery answers again.")
	})
	healed := time.Now()
	op.waitFor(t, "the daemon beats on after the failure", func() bool {
		return daemon.intact(run) && daemon.beatAfter(healed.Add(rediscovery))
	})

	if runs := daemon.runs(); len(runs) != 1 {
		t.Errorf("daemon runs %v, want the one run throughout", runs)
	}
	for _, line := range []string{"is signalled to exit", "has exited", "no longer served", "objects are forgotten"} {
		if n := op.count(line); n != 0 {
			t.Errorf("the operator said %q %d times, want never: the daemon must not stop, nothing be forgotten", line, n)
		}
	}
	if n := fault.refused.Load(); n != 0 {
		t.Logf("the group's own discovery endpoint was asked %d times during the failure", n)
	}
	op.stop(t)
}

// daemonRecords reads the probe's records of its daemon.
type daemonRecords struct {
	t    *testing.T
	path string
}

func (d *daemonRecords) read() []activity.Record {
	rs, err := activity.ReadFile(d.path)
	if err != nil {
		return nil // not written yet
	}
	var out []activity.Record
	for _, r := range rs {
		if r.What == activity.Daemon {
			out = append(out, r)
		}
	}
	return out
}

// runs are the daemon's runs that started, in order.
func (d *daemonRecords) runs() []int64 {
	var out []int64
	for _, r := range d.read() {
		if r.Event == activity.Start {
			out = append(out, r.Run)
		}
	}
	return out
}

// beatAfter tells whether a run of the daemon beat after the moment.
func (d *daemonRecords) beatAfter(at time.Time) bool {
	for _, r := range d.read() {
		if r.Event == activity.Beat && r.Time().After(at) {
			return true
		}
	}
	return false
}

// intact fails the test at once if the run has ended or another has
// begun, and tells true otherwise, for waits that must see the run go on.
func (d *daemonRecords) intact(run int64) bool {
	d.t.Helper()
	for _, r := range d.read() {
		if r.Run != run || r.Event == activity.End {
			d.t.Fatalf("the daemon's run %d was interrupted: %s of run %d at %s", run, r.Event, r.Run, r.Time().Format(time.StampMilli))
		}
	}
	return true
}

// kickCRD is a CRD of another group, whose creation and deletion make the
// operator ask discovery again.
func kickCRD() *unstructured.Unstructured {
	crd := &unstructured.Unstructured{}
	crd.SetAPIVersion("apiextensions.k8s.io/v1")
	crd.SetKind("CustomResourceDefinition")
	crd.SetName("kicks.discovery.e2e.kopf.dev")
	crd.Object["spec"] = map[string]any{
		"group": "discovery.e2e.kopf.dev",
		"scope": "Namespaced",
		"names": map[string]any{"kind": "Kick", "plural": "kicks", "singular": "kick"},
		"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
			"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object"}}}},
	}
	return crd
}
