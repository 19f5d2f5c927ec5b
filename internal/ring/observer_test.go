package ring

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kopf-go/kopf/internal/sharding"
)

// testObserver is an observer of the ring "main" as the member self (""
// for an assigner apart from the members), under a fake clock, whose
// Leases the test shows it by hand.
func testObserver(t *testing.T, self string) (*observer, *clocktesting.FakeClock) {
	t.Helper()
	clk := clocktesting.NewFakeClock(t0)
	s := AssignerSettings{Ring: "main", Namespace: "ns", Identity: identity, Kinds: []schema.GroupVersionKind{{Version: "v1", Kind: "ConfigMap"}}, Clock: clk}
	if self != "" {
		s.Member = func() string { return self }
	}
	s, err := s.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	return (&Assigner{s: s}).observing(), clk
}

// epochLease is the epoch Lease with the members (joined in the order
// given) and the annotation of silent ones.
func epochLease(version string, members []string, silent string) *coordinationv1.Lease {
	joined := ""
	for i, m := range members {
		if i > 0 {
			joined += ","
		}
		joined += m + "=" + string(rune('1'+i))
	}
	sorted := slices.Sorted(slices.Values(members))
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: EpochLease("main"), ResourceVersion: version,
		Annotations: map[string]string{MembersAnnotation: joinNames(sorted), JoinedAnnotation: joined, SerialAnnotation: version}}}
	if silent != "" {
		lease.Annotations[SilentAnnotation] = silent
	}
	return lease
}

func joinNames(names []string) string {
	out := ""
	for i, n := range names {
		if i > 0 {
			out += ","
		}
		out += n
	}
	return out
}

func electionRecord(version string) *coordinationv1.Lease {
	lease := heldBy("other")
	lease.ResourceVersion = version
	return lease
}

func isCandidate(o *observer, member string, now time.Time) bool {
	is, _ := o.candidate(member, now)
	return is
}

// The epoch's oldest members are the candidates; the others are not,
// while the election is renewed; once nobody has renewed it for a lease
// duration, every replica is.
func TestObserverTellsTheCandidates(t *testing.T) {
	o, clk := testObserver(t, "e")
	if isCandidate(o, "a", clk.Now()) {
		t.Error("a candidate before the two Leases were listed")
	}
	o.sawEpoch(epochLease("7", []string{"a", "b", "c", "d", "e"}, ""))
	o.sawRecord(electionRecord("1"), true)
	o.listed()
	for _, m := range []string{"a", "b", "c"} {
		if !isCandidate(o, m, clk.Now()) {
			t.Errorf("%s, among the three oldest, is no candidate", m)
		}
	}
	if isCandidate(o, "e", clk.Now()) || isCandidate(o, "", clk.Now()) {
		t.Error("a member that joined last, or a replica that has not joined, is a candidate at its start")
	}
	// The first listing says nothing of the record's age: no renewal
	// within the start's grace orphans the election.
	grace := startGrace(o.a.s.RenewPeriod)
	clk.Step(grace - time.Millisecond)
	o.sawRecord(electionRecord("2"), false) // a renewal
	clk.Step(time.Millisecond)
	if isCandidate(o, "e", clk.Now()) {
		t.Error("e is a candidate though the election was renewed")
	}
	renewed := clk.Now().Add(-time.Millisecond)
	if _, until := o.candidate("e", clk.Now()); !until.Equal(renewed.Add(o.a.s.LeaseDuration)) {
		t.Errorf("the candidacy may change at %s, want a lease duration after the renewal", until.Sub(t0))
	}
	o.sawRecord(electionRecord("2"), false) // the same version again (a relist)
	clk.SetTime(renewed.Add(o.a.s.LeaseDuration - time.Millisecond))
	if isCandidate(o, "e", clk.Now()) {
		t.Error("e is a candidate before the election went unrenewed for a lease duration")
	}
	clk.Step(time.Millisecond)
	if !isCandidate(o, "e", clk.Now()) || !isCandidate(o, "", clk.Now()) {
		t.Error("the election unrenewed for a lease duration, and e or a replica that has not joined is no candidate")
	}
	if seen := o.seen(); seen.Lease.ResourceVersion != "2" || !seen.At.Equal(renewed) {
		t.Errorf("the record seen is version %s at %s, want version 2 at its renewal", seen.Lease.ResourceVersion, seen.At.Sub(t0))
	}
	o.sawRecord(nil, false) // deleted: a change
	if isCandidate(o, "e", clk.Now()) {
		t.Error("e is a candidate just after the election Lease changed")
	}
}

// A ring without an epoch, and an assigner apart from the members, have
// every replica campaign; a stopping member is no candidate while three
// others are not stopping.
func TestObserverWithoutAnEpochOrAMemberCampaigns(t *testing.T) {
	o, clk := testObserver(t, "e")
	o.sawRecord(electionRecord("1"), true)
	o.listed()
	o.sawRecord(electionRecord("2"), false)
	if !isCandidate(o, "e", clk.Now()) {
		t.Error("a replica of a ring without an epoch is no candidate")
	}
	lease := epochLease("3", []string{"a", "b", "c", "d", "e"}, "")
	lease.Annotations[StoppingAnnotation] = "a"
	o.sawEpoch(lease)
	if isCandidate(o, "a", clk.Now()) || !isCandidate(o, "d", clk.Now()) {
		t.Error("the stopping a is a candidate, or d, the oldest after the three that do not stop, is not")
	}

	apart, clk := testObserver(t, "")
	apart.sawEpoch(epochLease("3", []string{"a", "b", "c", "d"}, ""))
	apart.listed()
	apart.sawRecord(electionRecord("2"), false)
	if !isCandidate(apart, "", clk.Now()) {
		t.Error("an assigner apart from the members is no candidate")
	}
}

// Every member hears of a silent member once while the epoch lists it
// silent, and again if it is listed silent anew; a name that is no
// member is not told.
func TestObserverTellsTheSilentMembersOnce(t *testing.T) {
	o, _ := testObserver(t, "a")
	var told []string
	o.a.s.OnSilent = func(m string) { told = append(told, m) }
	var epochs []int64
	o.a.s.OnEpoch = func(e sharding.Epoch) { epochs = append(epochs, e.Serial) }
	members := []string{"a", "b", "c"}
	o.sawEpoch(epochLease("1", members, "b,x"))
	o.sawEpoch(epochLease("2", members, "b,c"))
	o.sawEpoch(epochLease("3", members, "c"))
	o.sawEpoch(epochLease("4", members, "b,c"))
	if want := []string{"b", "c", "b"}; !slices.Equal(told, want) {
		t.Errorf("told silent %v, want %v", told, want)
	}
	if want := []int64{1, 2, 3, 4}; !slices.Equal(epochs, want) {
		t.Errorf("epochs handed on %v, want %v", epochs, want)
	}
}

// The observer's wait ends when the candidacy changes with an event or
// with the time alone, and with its context.
func TestObserverAwaitsTheCandidacy(t *testing.T) {
	checkNoLeaks(t)
	o, clk := testObserver(t, "e")
	o.sawEpoch(epochLease("7", []string{"a", "b", "c", "d", "e"}, ""))
	o.sawRecord(electionRecord("1"), true)
	o.listed()
	o.sawRecord(electionRecord("2"), false)
	became := make(chan bool, 1)
	go func() { became <- o.await(context.Background(), true) }()
	select {
	case <-became:
		t.Fatal("the wait ended while e is no candidate")
	case <-time.After(100 * time.Millisecond):
	}
	for !clk.HasWaiters() {
		time.Sleep(time.Millisecond)
	}
	clk.Step(o.a.s.LeaseDuration)
	select {
	case ok := <-became:
		if !ok {
			t.Error("the wait says its context ended")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the wait did not end when the election went unrenewed")
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { became <- o.await(ctx, false) }()
	cancel()
	if ok := <-became; ok {
		t.Error("the wait ended with its context, and says the candidacy changed")
	}
}

// A campaign's watch of the election record hears every change that the
// observer sees, the deletion with the record deleted, and nothing of a
// record seen again; one that falls behind is closed (its campaign
// watches again at its next read), and a stopped one hears nothing.
func TestObserverFeedsTheCampaignsWatch(t *testing.T) {
	o, _ := testObserver(t, "a")
	o.sawRecord(electionRecord("1"), true)
	w := o.watchRecords()
	o.sawRecord(electionRecord("1"), false)
	o.sawRecord(electionRecord("2"), false)
	o.sawRecord(nil, false)
	for _, want := range []struct {
		typ     watch.EventType
		version string
	}{{watch.Modified, "2"}, {watch.Deleted, "2"}} {
		ev := <-w.ResultChan()
		if lease, _ := ev.Object.(*coordinationv1.Lease); ev.Type != want.typ || lease == nil || lease.ResourceVersion != want.version {
			t.Fatalf("event %s of %v, want %s of version %s", ev.Type, ev.Object, want.typ, want.version)
		}
	}
	for i := range 20 {
		o.sawRecord(electionRecord(strconv.Itoa(10+i)), false)
	}
	n := 0
	for range w.ResultChan() {
		n++
	}
	if n != 16 {
		t.Errorf("a watch that fell behind held %d events before it was closed, want its 16", n)
	}
	w.Stop() // closed already: nothing happens

	stopped := o.watchRecords()
	stopped.Stop()
	o.sawRecord(electionRecord("99"), false)
	if _, open := <-stopped.ResultChan(); open {
		t.Error("a stopped watch heard an event")
	}
}
