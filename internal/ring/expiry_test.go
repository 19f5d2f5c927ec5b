package ring

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kopf-go/kopf/internal/sharding"
)

// fakeLeases is a namespace's Leases by name, as resourceVersions; a
// deletion honours its resourceVersion precondition, as the API server
// does. fail makes every request about a Lease fail.
type fakeLeases struct {
	versions map[string]string
	// released are the Leases whose members released them.
	released map[string]bool
	fail     map[string]error
	deleted  []string
}

var leaseResource = schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}

func (f *fakeLeases) Get(_ context.Context, name string, _ metav1.GetOptions) (*coordinationv1.Lease, error) {
	if err := f.fail[name]; err != nil {
		return nil, err
	}
	v, ok := f.versions[name]
	if !ok {
		return nil, apierrors.NewNotFound(leaseResource, name)
	}
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: v}}
	if f.released[name] {
		lease.Annotations = map[string]string{ReleasedAnnotation: "2026-12-01T10:00:00Z"}
	}
	return lease, nil
}

func (f *fakeLeases) Delete(_ context.Context, name string, opts metav1.DeleteOptions) error {
	if err := f.fail[name]; err != nil {
		return err
	}
	v, ok := f.versions[name]
	switch {
	case !ok:
		return apierrors.NewNotFound(leaseResource, name)
	case opts.Preconditions == nil || opts.Preconditions.ResourceVersion == nil:
		return errors.New("an unconditional deletion of a Lease")
	case *opts.Preconditions.ResourceVersion != v:
		return apierrors.NewConflict(leaseResource, name, errors.New("the resourceVersion differs"))
	}
	delete(f.versions, name)
	f.deleted = append(f.deleted, name)
	return nil
}

// Members seen expired are asked about: the unchanged are dead and their
// Leases deleted; the renewed, whose renewals the watch had not shown
// yet, count as renewed now; those that released their Leases meanwhile
// are gone; a Lease deleted by someone else, whose deletion the watch
// showed, is dead once expired; the unreachable count as live until
// asked.
func TestConfirmDead(t *testing.T) {
	const lease = 15 * time.Second
	live := sharding.NewLiveness(lease)
	for _, m := range []string{"dead", "renewed", "vanished", "unreachable", "fresh", "released"} {
		live.Observe(m, "1", lease, t0)
	}
	live.SawGone("vanished")
	live.Observe("fresh", "2", lease, t0.Add(10*time.Second))
	leases := &fakeLeases{
		versions: map[string]string{
			leaseName("main", "dead"): "1", leaseName("main", "renewed"): "5",
			leaseName("main", "unreachable"): "1", leaseName("main", "fresh"): "2",
			leaseName("main", "released"): "3",
		},
		released: map[string]bool{leaseName("main", "released"): true},
		fail:     map[string]error{leaseName("main", "unreachable"): errors.New("connection refused")},
	}
	now := t0.Add(lease)
	dead, unconfirmed, err := confirmDead(context.Background(), leases, "main", live, now)
	if diff := cmp.Diff([]string{"dead", "released", "vanished"}, dead); diff != "" {
		t.Errorf("dead -want +got:\n%s", diff)
	}
	if diff := cmp.Diff([]string{"unreachable"}, unconfirmed); diff != "" {
		t.Errorf("unconfirmed -want +got:\n%s", diff)
	}
	if err == nil || !errors.Is(err, leases.fail[leaseName("main", "unreachable")]) {
		t.Errorf("err = %v, want the unreachable Lease's error", err)
	}
	if diff := cmp.Diff([]string{leaseName("main", "dead")}, leases.deleted); diff != "" {
		t.Errorf("deleted Leases -want +got:\n%s", diff)
	}
	if diff := cmp.Diff([]string{"fresh", "renewed"}, live.Live(now)); diff != "" {
		t.Errorf("live after confirming -want +got:\n%s", diff)
	}
	// The renewal counts from when it was found, for a whole duration.
	if diff := cmp.Diff([]string{"renewed"}, live.Live(now.Add(lease-time.Nanosecond))); diff != "" {
		t.Errorf("live a lease duration later -want +got:\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"unreachable": "1"}, live.Expired(now)); diff != "" {
		t.Errorf("still to confirm -want +got:\n%s", diff)
	}
}

// A Lease found gone whose deletion the watch never showed (a stuck
// watch, which may have missed the member's last renewals) counts as
// renewed when it is found gone, and its member is dead only when it is
// still gone a lease duration later.
func TestConfirmDeadWaitsOutALeaseGoneUnseen(t *testing.T) {
	const lease = 15 * time.Second
	live := sharding.NewLiveness(lease)
	live.Observe("unseen-gone", "1", lease, t0)
	leases := &fakeLeases{versions: map[string]string{}}
	first := t0.Add(lease)
	if dead, _, err := confirmDead(context.Background(), leases, "main", live, first); err != nil || len(dead) > 0 {
		t.Fatalf("found gone at once: dead %v, err %v; want none", dead, err)
	}
	if !live.IsLive("unseen-gone", first.Add(lease-time.Nanosecond)) {
		t.Error("the member is not live for a lease duration after its Lease was found gone")
	}
	if got := live.Expired(first.Add(lease - time.Nanosecond)); len(got) > 0 {
		t.Errorf("expired before a lease duration from the finding: %v", got)
	}
	dead, _, err := confirmDead(context.Background(), leases, "main", live, first.Add(lease))
	if err != nil || !slices.Equal(dead, []string{"unseen-gone"}) {
		t.Errorf("a lease duration later: dead %v, err %v; want it", dead, err)
	}
}

// Released Leases left behind are deleted if they are still as released;
// one that changed or went meanwhile is left alone.
func TestDeleteReleased(t *testing.T) {
	leases := &fakeLeases{versions: map[string]string{
		leaseName("main", "left"): "4", leaseName("main", "rejoined"): "9",
	}}
	released := map[string]string{"left": "4", "rejoined": "8", "gone": "2"}
	if err := deleteReleased(context.Background(), leases, "main", released); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{leaseName("main", "left")}, leases.deleted); diff != "" {
		t.Errorf("deleted -want +got:\n%s", diff)
	}
}

// Of an object, the assigner keeps (until it is placed) only what
// placing reads: its own ring's keys, and other rings' (foreign.go).
func TestSeenOf(t *testing.T) {
	main, other := KeysOf("operators", "main"), KeysOf("elsewhere", "main")
	in := &metav1.PartialObjectMetadata{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", UID: "u-1", ResourceVersion: "42",
			Finalizers: []string{"x/y"}, DeletionTimestamp: &metav1.Time{},
			Labels: map[string]string{main.Owner: "m1", other.Owner: "x", "app": "demo"},
			Annotations: map[string]string{main.Next: "m2", main.Granted: "m1", other.Granted: "x",
				"kopf.zalando.org/last-handled-configuration": "{}"}},
	}
	want := seen{uid: "u-1", resourceVersion: "42", now: sharding.Placement{Owner: "m1", Granted: "m1"},
		foreign: []foreignRing{{namespace: "elsewhere", ring: "main", owner: "x", granted: "x"}}, bucket: BucketLabel("ns", "a"),
		finalizers: []string{"x/y"}, deleting: true}
	if diff := cmp.Diff(want, seenOf(main, in), cmp.AllowUnexported(seen{}, foreignRing{})); diff != "" {
		t.Errorf("seenOf() -want +got:\n%s", diff)
	}
	bare := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "b", UID: "u-2", ResourceVersion: "7"}}
	if got := seenOf(main, bare); got.now != (sharding.Placement{}) {
		t.Errorf("an unowned object seen as placed: %+v", got.now)
	}
}
