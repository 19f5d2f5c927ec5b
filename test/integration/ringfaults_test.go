package integration

import (
	"bytes"
	"context"
	"errors"
	"io"
	"maps"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/internal/ring"
)

// A member's Lease deleted by hand is not a member that left: the member
// may be working until it notices, at its next renewal. It is retired
// only once its lease has run out, and then its objects are adopted by
// the others, with no write to them.
func TestAssignerWaitsForADeletedLeaseToExpire(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	m1, m2, m3, _, stop3 := startThree(t, ns, nil)
	// The assigner's clock is fake and stands still but when the test
	// steps it: every renewal it sees counts from the time it shows then.
	fake := clocktesting.NewFakeClock(time.Now())
	logs, _ := startAssignerOn(t, ns, "kopf@host-1", ringLease, fake, env.Config)
	eventually(t, "every object owned", ownedAsHashed(t, ns, 30, names(m1, m2, m3)))
	before := placements(t, ns)

	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: m3.LeaseName()}}
	if err := env.Client.Delete(context.Background(), lease); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the member whose Lease was deleted fences itself at its next renewal", func() bool {
		select {
		case <-m3.Fenced():
			return true
		default:
			return false
		}
	})
	// Just short of a lease duration after the member's last renewal, the
	// others renew, and the assigner sees it: it has had its chance to
	// count the member dead, and must not have.
	fake.Step(ringLease - ringLease/4)
	seenRenewing(t, ns, m1, m2)
	if !maps.Equal(before, placements(t, ns)) || logs.has("Members stopped renewing their Leases") {
		t.Fatal("the assigner moved the objects of the member whose Lease was deleted before its lease duration had run out")
	}
	fake.Step(ringLease / 2) // a quarter of a lease past its end
	eventually(t, "it is retired, its objects adopted by the others", adoptedBy(t, ns, m3, before, m1, m2))
	if err := stop3(); !errors.Is(err, ring.ErrLeaseDeleted) {
		t.Errorf("the member whose Lease was deleted: Start() = %v, want %v", err, ring.ErrLeaseDeleted)
	}
}

// An owner label edited by hand to a name that is no member's, or
// removed, starts nobody (the grant still names the owner), and the
// assigner, which sees the object since no live member's label is on it,
// puts it back. (A label edited to another live member's name is put back
// by that member: test/sharding.)
func TestAssignerPutsBackAnOwnerLabelEditedByHand(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	m1, m2, m3, _, _ := startThree(t, ns, nil)
	logs, _ := startAssigner(t, ns, "kopf@host-1", ringLease)
	live := names(m1, m2, m3)
	eventually(t, "every object owned", ownedAsHashed(t, ns, 30, live))

	for _, label := range []*string{ptr.To("m-nobody"), nil} {
		var name, owner string
		for n, p := range placements(t, ns) {
			name, owner = n, p.owner
			break
		}
		cm := &corev1.ConfigMap{}
		if err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, cm); err != nil {
			t.Fatal(err)
		}
		edit := client.MergeFrom(cm.DeepCopy())
		if label != nil {
			cm.Labels[ringKeys(ns).Owner] = *label
		} else {
			delete(cm.Labels, ringKeys(ns).Owner)
		}
		if err := env.Client.Patch(context.Background(), cm, edit); err != nil {
			t.Fatal(err)
		}
		eventually(t, "the owner label put back", ownedAsHashed(t, ns, 30, live))
		// The assigner says so once its write has landed, which the
		// test may see first.
		said := "Put the owner label of " + ns + "/" + name + " back to " + owner
		for deadline := time.Now().Add(5 * time.Second); !logs.has(said) && time.Now().Before(deadline); {
			time.Sleep(50 * time.Millisecond)
		}
		if !logs.has(said) {
			t.Errorf("the assigner did not say that it put the label back: %q", logs.all())
		}
	}
}

// The assigner counts a member live for the member's own lease duration
// when it is longer than the assigner's (a rollout that shortens the
// durations): the member fences itself only by its own.
func TestAssignerHonoursAMembersLongerLease(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	const longer = 4 * time.Second
	failing := &atomic.Bool{}
	m1, _ := startMember(t, ns, "kopf@host-1", nil)
	m2, _ := startMember(t, ns, "kopf@host-2", nil)
	m3, stop3 := startMemberFor(t, ns, "kopf@host-3", stallable(t, failing), longer)
	createConfigMaps(t, ns, "cm", 30)
	// The assigner's clock is fake and stands still but when the test
	// steps it: every renewal it sees counts from the time it shows then.
	fake := clocktesting.NewFakeClock(time.Now())
	logs, _ := startAssignerOn(t, ns, "kopf@host-1", ringLease, fake, env.Config)
	eventually(t, "every object owned", ownedAsHashed(t, ns, 30, names(m1, m2, m3)))
	before := placements(t, ns)

	failing.Store(true)
	<-m3.Fenced()
	// Three quarters of the stalled member's lease after its last renewal
	// (past the assigner's own lease duration, short of the member's), in
	// two steps after each of which the others renew and the assigner
	// sees it: it has had its chance to count the member dead, and must
	// not have.
	for range 2 {
		fake.Step(longer * 3 / 8)
		seenRenewing(t, ns, m1, m2)
	}
	if !maps.Equal(before, placements(t, ns)) || logs.has("Members stopped renewing their Leases") {
		t.Fatal("the assigner counted the member with the longer lease dead by its own lease duration")
	}
	fake.Step(longer * 3 / 8) // an eighth of its lease past its end, the others' renewals within theirs
	eventually(t, "it is retired, its objects adopted by the others", adoptedBy(t, ns, m3, before, m1, m2))
	<-m3.Fenced()
	if err := stop3(); !errors.Is(err, ring.ErrMembershipLost) {
		t.Errorf("the stalled member: Start() = %v, want %v", err, ring.ErrMembershipLost)
	}
}

// An assigner that starts after a member's Lease was deleted by hand has
// never seen that member, which may still be working: it leaves the
// member alone for a lease duration from its first listing. A member that
// released its Lease is known to have left, since a released Lease stays
// a while: it is retired at once, and its objects adopted.
func TestANewAssignerDoubtsOnlyMembersItNeverSaw(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	m1, m2, m3, stop2, stop3 := startThree(t, ns, nil)
	_, stopA := startAssigner(t, ns, "assigner-a", ringLease)
	eventually(t, "every object owned", ownedAsHashed(t, ns, 30, names(m1, m2, m3)))
	stopA()
	before := placements(t, ns)

	if err := stop2(); err != nil {
		t.Fatalf("the leaving member: %v", err)
	}
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: m3.LeaseName()}}
	if err := env.Client.Delete(context.Background(), lease); err != nil {
		t.Fatal(err)
	}
	startAssigner(t, ns, "assigner-b", ringLease)
	eventually(t, "the member that left is retired", adoptedBy(t, ns, m2, before, m1))
	eventually(t, "the member whose Lease was deleted is retired after the doubt", adoptedBy(t, ns, m3, before, m1))
	if e := epochOf(t, ns); e.Retired[m3.Name()] <= e.Retired[m2.Name()] {
		t.Errorf("the member whose Lease was deleted was retired with the member that left, not after: %+v", e)
	}
	if err := stop3(); !errors.Is(err, ring.ErrLeaseDeleted) {
		t.Errorf("the member whose Lease was deleted: Start() = %v, want %v", err, ring.ErrLeaseDeleted)
	}
}

// An assigner whose watch of the ring's Leases is stuck (one stream
// stalled while the rest of its connection works) never hears of a member
// that joined after its listing. Past its doubt such a member would count
// as dead, and its objects would move while it works on them; instead the
// assigner asks the API server for the member's Lease before it moves
// anything granted to it, finds it there, and leaves the objects alone.
func TestAStuckLeaseWatchMovesNoObjectOfAMemberItNeverSaw(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	m1, m2, m3, _, _ := startThree(t, ns, nil)
	_, stopA := startAssigner(t, ns, "assigner-a", ringLease)
	eventually(t, "every object owned", ownedAsHashed(t, ns, 30, names(m1, m2, m3)))
	stopA()

	var stalled atomic.Int32
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTrip(func(req *http.Request) (*http.Response, error) {
			if !strings.HasSuffix(req.URL.Path, "/leases") || req.URL.Query().Get("watch") != "true" {
				return rt.RoundTrip(req)
			}
			stalled.Add(1)
			resp, err := rt.RoundTrip(req)
			if err != nil {
				return resp, err
			}
			// client-go lists through the watch (its watch-list) when it
			// can: the listing passes, and the stream stalls after it.
			resp.Body = &stallAfterListing{ReadCloser: resp.Body, done: req.Context().Done(),
				listed: req.URL.Query().Get("sendInitialEvents") != "true"}
			return resp, nil
		})
	})
	fake := clocktesting.NewFakeClock(time.Now())
	logsB, _ := startAssignerOn(t, ns, "assigner-b", ringLease, fake, cfg)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("B's log: %q", logsB.all())
		}
	})
	eventually(t, "B is the assigner", func() bool { return logsB.has("This replica is the ring's assigner.") })
	eventually(t, "B's watch of the Leases is stuck", func() bool { return stalled.Load() > 0 })

	m4, _ := startMember(t, ns, "kopf@host-4", nil)
	given := 0
	for name, p := range placements(t, ns) {
		if p.owner == m1.Name() && given < 3 {
			acknowledge(t, ns, name, m4.Name()) // handed over, as an owner does
			given++
		}
	}
	before := placements(t, ns)
	// Every member renews since B's listing (as they would within the
	// lease duration that B's clock is about to jump), so that B's
	// conditional deletions of their Leases conflict and count them as
	// renewed: B hears of no renewal through its watch.
	seenRenewing(t, ns, m1, m2, m3, m4)
	// Past B's doubt about members it never saw. B's election runs on
	// the same clock: one step past its renew deadline would end B's
	// term before its doubt is acted on (a loaded machine showed that
	// race), and a new term lists the Leases again and sees m4. So the
	// clock moves in steps shorter than the renew period, with time
	// between them for the renewals that each tick asks for.
	for moved := time.Duration(0); moved < ringLease+time.Second; moved += ringPeriod / 3 {
		fake.Step(ringPeriod / 3)
		time.Sleep(50 * time.Millisecond)
	}
	// B has placed the objects without a live owner among the members it
	// knows within a second or two of the step (it did before the fix):
	// watch five.
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		for name, p := range placements(t, ns) {
			if before[name].owner == m4.Name() && p.owner != m4.Name() {
				t.Fatalf("%s moved from %s, which is live, to %s", name, m4.Name(), p.owner)
			}
		}
	}
	if !logsB.has("whose Lease this replica never saw", m4.Name()) {
		t.Error("B did not say that it found a member it never saw")
	}
}

// stallAfterListing is a watch stream that delivers its initial events
// (those up to the bookmark that ends them) and then nothing, until its
// request ends; listed: there are none, it stalls at once.
type stallAfterListing struct {
	io.ReadCloser
	done   <-chan struct{}
	listed bool
}

func (s *stallAfterListing) Read(p []byte) (int, error) {
	if s.listed {
		<-s.done
		return 0, io.EOF
	}
	n, err := s.ReadCloser.Read(p)
	if bytes.Contains(p[:n], []byte("k8s.io/initial-events-end")) {
		s.listed = true
	}
	return n, err
}
