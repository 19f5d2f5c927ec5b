package faults

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/test/faults/activity"
	"github.com/kopf-go/kopf/test/faults/checker"
)

// labelChange is an owner label's value as the observer saw it change.
type labelChange struct {
	object, value string
	at            time.Time
}

// observer watches a namespace's objects directly (no proxy). It keeps
// every value their owner labels take, to find owner labels that someone
// other than the ring wrote, and every version of every object in
// resourceVersion order (owner label, grant, the handlers' results and
// their writers), for the checker's rule of late writes; beside, the
// member names of the ring's Leases and their holders.
type observer struct {
	ns      string
	names   wireNames
	leaseNS string
	ring    string
	c       client.WithWatch

	mu       sync.Mutex
	last     map[string]string
	changes  []labelChange
	versions []checker.Version
	// gap says the next version of every object may follow unseen ones
	// (the observer listed anew); seen holds the objects it has a version
	// of since.
	gap     bool
	seen    map[string]bool
	members map[string]string
	// held is when each member's Lease was last seen held (UnixNano).
	held map[string]int64

	cancel context.CancelFunc
	done   chan struct{}
}

// observe starts watching the objects of ns and the Leases of the ring;
// it stops when the test ends, or by stop.
func observe(t testing.TB, ns string, r *ring) *observer {
	t.Helper()
	c, err := client.NewWithWatch(fixtures.env.Config, client.Options{Scheme: fixtures.env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	o := &observer{ns: ns, names: r.names, leaseNS: r.leaseNS, ring: r.name, c: c, last: map[string]string{},
		seen: map[string]bool{}, members: map[string]string{}, held: map[string]int64{}, cancel: cancel, done: make(chan struct{})}
	leases := make(chan struct{})
	go func() {
		defer close(leases)
		o.followLeases(ctx)
	}()
	go func() {
		defer close(o.done)
		o.run(ctx)
		<-leases
	}()
	t.Cleanup(o.stop)
	return o
}

func (o *observer) stop() {
	o.cancel()
	<-o.done
}

// run watches until ctx ends: it lists, then watches from the list's
// version, and again from the last version seen whenever a watch ends,
// so that it sees every version of every object; only a watch that
// cannot go on (its version is too old) makes it list anew, and the
// versions right after are marked as following a gap.
func (o *observer) run(ctx context.Context) {
	rv, listed := "", false
	for ctx.Err() == nil {
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion("kopf.dev/v1")
		list.SetKind("KopfExampleList")
		if rv == "" {
			if err := o.c.List(ctx, list, client.InNamespace(o.ns)); err != nil {
				sleep(ctx, 100*time.Millisecond)
				continue
			}
			// Versions may have gone unseen since the last watch, not
			// before the first listing.
			o.mu.Lock()
			o.gap, o.seen = listed, map[string]bool{}
			o.mu.Unlock()
			listed = true
			for i := range list.Items {
				o.see(&list.Items[i])
			}
			rv = list.GetResourceVersion()
		}
		w, err := o.c.Watch(ctx, list, client.InNamespace(o.ns), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv}})
		if err != nil {
			rv = ""
			sleep(ctx, 100*time.Millisecond)
			continue
		}
		rv = o.follow(ctx, w, rv)
	}
}

// follow reads a watch until it ends; it returns the last version seen,
// "" if the watch ended in an error.
func (o *observer) follow(ctx context.Context, w watch.Interface, rv string) string {
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return rv
		case ev, ok := <-w.ResultChan():
			if !ok {
				return rv
			}
			if ev.Type == watch.Error {
				return ""
			}
			if obj, isObj := ev.Object.(*unstructured.Unstructured); isObj {
				o.see(obj)
				rv = obj.GetResourceVersion()
			}
		}
	}
}

// see records the object's version, and its label if it changed.
func (o *observer) see(obj *unstructured.Unstructured) {
	o.mu.Lock()
	defer o.mu.Unlock()
	name, value := obj.GetNamespace()+"/"+obj.GetName(), obj.GetLabels()[o.names.ownerLabel]
	key := name + "/" + string(obj.GetUID())
	v := checker.Version{Object: name, UID: string(obj.GetUID()), RV: obj.GetResourceVersion(), At: time.Now().UnixNano(),
		Owner: value, Grant: obj.GetAnnotations()[o.names.grantAnnotation], Results: results(obj), AfterGap: o.gap && !o.seen[key]}
	o.seen[key] = true
	o.versions = append(o.versions, v)
	if prev, ok := o.last[name]; ok && prev == value {
		return
	}
	o.last[name] = value
	o.changes = append(o.changes, labelChange{object: name, value: value, at: time.Now()})
}

// results are the probe's results in the object's status, by handler id.
func results(obj *unstructured.Unstructured) map[string]checker.Result {
	status, _ := obj.Object["status"].(map[string]any)
	out := map[string]checker.Result{}
	for id, v := range status {
		m, ok := v.(map[string]any)
		if !ok {
			continue
		}
		actor, _ := m[activity.ResultActor].(string)
		if actor == "" {
			continue
		}
		r := checker.Result{Actor: actor}
		switch n := m[activity.ResultRun].(type) {
		case int64:
			r.Run = n
		case float64:
			r.Run = int64(n)
		}
		out[id] = r
	}
	return out
}

// followLeases lists the ring's Leases every 200 ms until ctx ends and
// keeps every member name seen with its holder: a member's Lease lives a
// lease duration at least after its last renewal, so none goes unseen.
func (o *observer) followLeases(ctx context.Context) {
	for ctx.Err() == nil {
		var list coordinationv1.LeaseList
		if err := o.c.List(ctx, &list, client.InNamespace(o.leaseNS), client.MatchingLabels{o.names.ringLabel: o.ring}); err == nil {
			o.mu.Lock()
			for _, l := range list.Items {
				name, ok := strings.CutPrefix(l.Name, o.names.memberLeasePrefix)
				if ok && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "" {
					o.members[name] = *l.Spec.HolderIdentity
					o.held[name] = time.Now().UnixNano()
				}
			}
			o.mu.Unlock()
		}
		sleep(ctx, leasePoll)
	}
}

// leasePoll is how often followLeases lists the Leases.
const leasePoll = 200 * time.Millisecond

// seenVersions are the versions seen so far, the member names, and when
// each member's Lease was last seen held.
func (o *observer) seenVersions() ([]checker.Version, map[string]string, map[string]int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.versions), maps.Clone(o.members), maps.Clone(o.held)
}

// written are the label changes to any of the values.
func (o *observer) written(values map[string]bool) []labelChange {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []labelChange
	for _, c := range o.changes {
		if values[c.value] {
			out = append(out, c)
		}
	}
	return out
}
