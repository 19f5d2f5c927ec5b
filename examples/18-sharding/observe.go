package main

// What the demo shows: who owns each object, read from the objects
// themselves; the waits until the ring settles; the tables.

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/handlers"
)

// read reads each object's owner, grant and creator, by replica name.
func (d *demoRun) read(ctx context.Context) (map[string]ownership, error) {
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion("kopf.dev/v1")
	list.SetKind("KopfExampleList")
	if err := d.c.List(ctx, list, client.InNamespace(d.ns), client.HasLabels{demoLabel}); err != nil {
		return nil, fmt.Errorf("list the objects: %w", err)
	}
	// The owner label names a member; the grant annotation, the member
	// that was given the object: the two differ only in the instant of a
	// move.
	label := handlers.ShardOwnerLabel(d.ns, demoRing)
	grant := handlers.ShardGrantAnnotation(d.ns, demoRing)
	out := map[string]ownership{}
	for _, obj := range list.Items {
		message, _, _ := unstructured.NestedString(obj.Object, "status", "create_fn", "message")
		out[obj.GetName()] = ownership{
			owner:   d.replicaOf(obj.GetLabels()[label]),
			granted: d.replicaOf(obj.GetAnnotations()[grant]),
			creator: strings.TrimPrefix(message, "created by "),
		}
	}
	return out, nil
}

// replicaOf is the name of the replica with the member name; a member of
// no replica of this run is shown as it is.
func (d *demoRun) replicaOf(member string) string {
	if name, ok := d.names[member]; ok {
		return name
	}
	return member
}

// settle waits until every object is owned by a running replica, granted
// to it and its create handler done, and the owners have
// stayed so for a moment. A joining replica is given a moment to take
// objects first.
func (d *demoRun) settle(ctx context.Context, joining string) (map[string]ownership, error) {
	started, since := time.Now(), time.Now()
	var last map[string]ownership
	err := d.waitFor(ctx, "the objects settle among the replicas", func() (bool, error) {
		owners, err := d.read(ctx)
		if err != nil || !d.settled(owners) {
			last = nil
			return false, err
		}
		if !maps.Equal(owners, last) {
			last, since = owners, time.Now()
		}
		taken := joining == "" || slices.ContainsFunc(slices.Collect(maps.Values(owners)),
			func(o ownership) bool { return o.owner == joining })
		return time.Since(since) >= quiet && (taken || time.Since(started) >= joinGrace), nil
	})
	return last, err
}

// settled reports whether every object is owned by a running replica,
// granted to it, and created.
func (d *demoRun) settled(owners map[string]ownership) bool {
	if len(owners) != d.objects {
		return false
	}
	for _, o := range owners {
		if d.running[o.owner] == nil || o.granted != o.owner || o.creator == "" {
			return false
		}
	}
	return true
}

// waitFor polls cond until it holds. It gives up after waitTimeout, when
// ctx is done, or when a replica has stopped by itself: e.g. it lost its
// membership, as a replica does that cannot renew its Lease in time.
func (d *demoRun) waitFor(ctx context.Context, what string, cond func() (bool, error)) error {
	deadline := time.Now().Add(waitTimeout)
	for {
		for name, r := range d.running {
			select {
			case <-r.done:
				return fmt.Errorf("%s stopped while waiting until %s: %w", name, what, r.err)
			default:
			}
		}
		switch ok, err := cond(); {
		case err != nil:
			return fmt.Errorf("wait until %s: %w", what, err)
		case ok:
			return nil
		case time.Now().After(deadline):
			return fmt.Errorf("%s did not happen within %s", what, waitTimeout)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("interrupted while waiting until %s", what)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// printTable prints who owns each object, and where it came from if it
// moved since before.
func printTable(title string, before, after map[string]ownership) {
	// One write for the whole table, so that no log line cuts into it.
	var out strings.Builder
	fmt.Fprintf(&out, "\n%s:\n", title)
	w := tabwriter.NewWriter(&out, 0, 0, 3, ' ', 0)
	fmt.Fprintln(w, "OBJECT\tOWNER\tCREATED BY")
	moved, counts := 0, map[string]int{}
	for _, name := range slices.Sorted(maps.Keys(after)) {
		owner := after[name].owner
		counts[owner]++
		if was, ok := before[name]; ok && was.owner != owner {
			moved++
			owner = was.owner + " -> " + owner
		}
		fmt.Fprintf(w, "%s\t%s\t%s\n", name, owner, after[name].creator)
	}
	_ = w.Flush()
	var shares []string
	for _, name := range slices.Sorted(maps.Keys(counts)) {
		shares = append(shares, fmt.Sprintf("%s has %d", name, counts[name]))
	}
	fmt.Fprintf(&out, "%s; %d moved.\n", strings.Join(shares, ", "), moved)
	fmt.Print(out.String())
}
