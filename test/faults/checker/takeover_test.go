package checker

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kopf-go/kopf/test/faults/activity"
	"github.com/kopf-go/kopf/test/faults/faultlog"
)

// moved is a Takeover without its fault, in ms.
type moved struct {
	Objects, Moved, Gone int
	First, All           time.Duration
	Gaps                 []Gap
}

func TestTakeovers(t *testing.T) {
	tests := []struct {
		name    string
		records []activity.Record
		fault   faultlog.Entry
		want    []moved
	}{
		{name: "a killed owner's objects move after the lease",
			records: concat(daemon("a/1", "ns/o", 0, 1000, false), daemon("a/1", "ns/p", 0, 1000, false),
				daemon("b/2", "ns/o", 16000, 20000, true), daemon("c/3", "ns/p", 17000, 20000, true),
				daemon("b/2", "ns/q", 0, 20000, true)), // not the victim's
			fault: fault(1, faultlog.Kill, "a/1", 1000, 1000),
			want: []moved{{Objects: 2, Moved: 2, First: 15000 * time.Millisecond, All: 16000 * time.Millisecond, Gaps: []Gap{
				{Object: "ns/o", Old: "a/1", New: "b/2", Gap: 15 * time.Second},
				{Object: "ns/p", Old: "a/1", New: "c/3", Gap: 16 * time.Second}}}}},
		{name: "an owner that goes on after its Lease is gone: a negative gap",
			records: concat(daemon("a/1", "ns/o", 0, 3000, true), daemon("b/2", "ns/o", 1500, 5000, true)),
			fault:   fault(1, faultlog.LeaseDeleted, "a/1", 1000, 1000),
			want: []moved{{Objects: 1, Moved: 1, First: 500 * time.Millisecond, All: 500 * time.Millisecond, Gaps: []Gap{
				{Object: "ns/o", Old: "a/1", New: "b/2", Gap: -1500 * time.Millisecond}}}}},
		{name: "a restart at once: the same replica's new process takes over",
			records: concat(daemon("a/1", "ns/o", 0, 1000, false), daemon("a/2", "ns/o", 3000, 5000, true)),
			fault:   fault(1, faultlog.RestartAtOnce, "a/1", 1000, 1000),
			want: []moved{{Objects: 1, Moved: 1, First: 2000 * time.Millisecond, All: 2000 * time.Millisecond, Gaps: []Gap{
				{Object: "ns/o", Old: "a/1", New: "a/2", Gap: 2 * time.Second}}}}},
		{name: "the victim's own activity after a pause is no takeover",
			records: paused(daemon("a/1", "ns/o", 0, 9000, true), 1000, 5000),
			fault:   fault(1, faultlog.Pause, "a/1", 1000, 5000),
			want:    []moved{{Objects: 1, First: -1, All: -1}}},
		{name: "a resumed victim active on the taken object past the window: a negative gap",
			records: concat(paused(daemon("a/1", "ns/o", 0, 9000, true), 1000, 5000), daemon("b/2", "ns/o", 4000, 12000, true)),
			fault:   fault(1, faultlog.Pause, "a/1", 1000, 5000),
			want: []moved{{Objects: 1, Moved: 1, First: 3 * time.Second, All: 3 * time.Second, Gaps: []Gap{
				{Object: "ns/o", Old: "a/1", New: "b/2", Gap: -5 * time.Second}}}}},
		{name: "a victim that gets the object back after the new owner: no overlap, a positive gap",
			records: concat(daemon("a/1", "ns/o", 0, 1000, true), daemon("b/2", "ns/o", 1500, 3000, true), daemon("a/1", "ns/o", 3500, 9000, true)),
			fault:   faultlog.Entry{ID: 1, Kind: faultlog.LabelEdited, Actor: "a/1", Object: "ns/o", Start: ms(900), End: ms(900)},
			want: []moved{{Objects: 1, Moved: 1, First: 600 * time.Millisecond, All: 600 * time.Millisecond, Gaps: []Gap{
				{Object: "ns/o", Old: "a/1", New: "b/2", Gap: 500 * time.Millisecond}}}}},
		{name: "a label edit moves its one object",
			records: concat(daemon("a/1", "ns/o", 0, 1200, true), daemon("a/1", "ns/p", 0, 9000, true),
				daemon("b/2", "ns/o", 1300, 9000, true)),
			fault: faultlog.Entry{ID: 1, Kind: faultlog.LabelEdited, Actor: "a/1", Object: "ns/o", Start: ms(1000), End: ms(1000)},
			want: []moved{{Objects: 1, Moved: 1, First: 300 * time.Millisecond, All: 300 * time.Millisecond, Gaps: []Gap{
				{Object: "ns/o", Old: "a/1", New: "b/2", Gap: 100 * time.Millisecond}}}}},
		{name: "an object deleted before the fault has nothing to take over",
			records: concat(daemon("a/1", "ns/o", 0, 5000, false), running("a/1", "ns/o", activity.Delete, 100, 1100, true, true),
				daemon("a/1", "ns/p", 0, 5000, false), daemon("b/2", "ns/p", 20000, 21000, true)),
			fault: fault(1, faultlog.TermIgnored, "a/1", 2000, 5000),
			want: []moved{{Objects: 1, Moved: 1, First: 18 * time.Second, All: 18 * time.Second, Gaps: []Gap{
				{Object: "ns/p", Old: "a/1", New: "b/2", Gap: 15 * time.Second}}}}},
		{name: "an object deleted by a second ring's replica during the fault is gone, not stuck",
			records: concat(daemon("a/1", "ns/o", 0, 1000, false), running("second-0/9", "ns/o", activity.Delete, 6000, 7000, true, true)),
			fault:   fault(1, faultlog.Kill, "a/1", 1000, 1000),
			want:    []moved{{Objects: 1, Gone: 1, First: -1, All: -1}}},
		{name: "a second ring's replica is no new owner",
			records: concat(daemon("a/1", "ns/o", 0, 1000, false), daemon("second-0/9", "ns/o", 1100, 1500, true),
				daemon("b/2", "ns/o", 16000, 20000, true)),
			fault: fault(1, faultlog.Kill, "a/1", 1000, 1000),
			want: []moved{{Objects: 1, Moved: 1, First: 15000 * time.Millisecond, All: 15000 * time.Millisecond, Gaps: []Gap{
				{Object: "ns/o", Old: "a/1", New: "b/2", Gap: 15 * time.Second}}}}},
		{name: "a victim with no objects",
			records: concat(daemon("b/2", "ns/o", 0, 9000, true)),
			fault:   fault(1, faultlog.Kill, "a/1", 1000, 1000),
			want:    []moved{{First: -1, All: -1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			faults := []faultlog.Entry{tt.fault, {ID: 9, Kind: faultlog.SecondRing, Members: []string{"second-0"}, Start: ms(5000)}}
			r := Check(Input{Records: tt.records, Faults: faults})
			var got []moved
			for _, x := range r.Takeovers {
				got = append(got, moved{x.Objects, x.Moved, x.Gone, x.First, x.All, x.Gaps})
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("takeovers -want +got:\n%s", diff)
			}
		})
	}
}

func TestDuplicates(t *testing.T) {
	records := concat(
		running("a/1", "ns/o", activity.Create, 0, 3000, true, true),
		running("b/2", "ns/o", activity.Create, 20000, 23000, true, true),
		// Cut short by a cancellation: not a completion.
		running("a/1", "ns/p", activity.Create, 0, 3000, true, false),
		running("b/2", "ns/p", activity.Create, 20000, 23000, true, true),
		// Completed twice, by one replica and then its successor, no fault.
		running("c/3", "ns/q", activity.Create, 0, 3000, true, true),
		running("c/4", "ns/q", activity.Create, 5000, 8000, true, true),
	)
	faults := []faultlog.Entry{fault(1, faultlog.Kill, "a/1", 3100, 3100), fault(2, faultlog.Pause, "b/2", 500, 600)}
	r := Check(Input{Records: records, Faults: faults})
	want := []Duplicate{
		{Object: "ns/o", UID: "uid-ns/o", Actors: []string{"a/1", "b/2"}, Ends: []int64{ms(3000), ms(23000)}, Kind: faultlog.Kill},
		{Object: "ns/q", UID: "uid-ns/q", Actors: []string{"c/3", "c/4"}, Ends: []int64{ms(3000), ms(8000)}},
	}
	if diff := cmp.Diff(want, r.Duplicates); diff != "" {
		t.Errorf("duplicates -want +got:\n%s", diff)
	}
}

// A suite picks its victims by what the checker will count: an object
// whose deletion the actor completed, a run of a single record, an old
// run and another actor's runs are not the actor's objects now.
func TestActiveObjects(t *testing.T) {
	lone := activity.Record{Actor: "a/1", Object: "ns/lone", What: activity.Update, Event: activity.Start, At: ms(9900), Run: 999}
	records := concat(
		daemon("a/1", "ns/daemon", 0, 10000, false),
		running("a/1", "ns/updated", activity.Update, 9700, 9800, true, true),
		running("a/1", "ns/deleted", activity.Delete, 9500, 9800, true, true),
		daemon("a/1", "ns/deleted", 0, 9800, true),
		running("a/1", "ns/old", activity.Update, 1000, 1100, true, true),
		daemon("b/2", "ns/other", 0, 10000, false),
		[]activity.Record{lone},
	)
	got := ActiveObjects(records, "a/1", time.Unix(0, ms(10000)), 500*time.Millisecond)
	if diff := cmp.Diff([]string{"ns/daemon", "ns/updated"}, got); diff != "" {
		t.Errorf("active objects -want +got:\n%s", diff)
	}
}

// A move is the fault's that made it: one that came after a later fault
// on the same victim process is that fault's, and after a fault that
// moves nothing, one that came after the victim's process exited is not
// the fault's either. A kill's own exit does not hide its takeover.
func TestAMoveIsTheFaultsThatMadeIt(t *testing.T) {
	type split struct{ Moved, Later int }
	exit := func(actor string, at int64) faultlog.Entry {
		return faultlog.Entry{ID: 90, Kind: faultlog.ProcessExit, Replica: "a", Actor: actor, Start: ms(at), End: ms(at)}
	}
	for _, tt := range []struct {
		name    string
		records []activity.Record
		faults  []faultlog.Entry
		want    map[int]split
	}{
		{name: "a label edited by hand, then the replica killed: the kill moved it",
			records: concat(daemon("a/1", "ns/o", 0, 50000, false), daemon("b/2", "ns/o", 65000, 70000, true)),
			faults: []faultlog.Entry{
				{ID: 1, Kind: faultlog.LabelEdited, Replica: "a", Actor: "a/1", Object: "ns/o", Start: ms(1000), End: ms(1100)},
				fault(2, faultlog.RestartAfter, "a/1", 50000, 66000), exit("a/1", 50000)},
			want: map[int]split{1: {Later: 1}, 2: {Moved: 1}}},
		{name: "a stalled watch, then the victim stopped by a rollout: the rollout moved it",
			records: concat(daemon("a/1", "ns/o", 0, 20000, true), daemon("b/2", "ns/o", 40000, 45000, true)),
			faults:  []faultlog.Entry{fault(1, faultlog.LeaseWatchStalled, "a/1", 1000, 5000), exit("a/1", 20000)},
			want:    map[int]split{1: {Later: 1}}},
		{name: "a kill's own exit: the kill moved it",
			records: concat(daemon("a/1", "ns/o", 0, 1000, false), daemon("b/2", "ns/o", 16000, 20000, true)),
			faults:  []faultlog.Entry{fault(1, faultlog.Kill, "a/1", 1000, 1000), exit("a/1", 1000)},
			want:    map[int]split{1: {Moved: 1}}},
		{name: "a later fault on another process of the replica changes nothing",
			records: concat(daemon("a/1", "ns/o", 0, 1000, false), daemon("b/2", "ns/o", 16000, 20000, true)),
			faults:  []faultlog.Entry{fault(1, faultlog.Kill, "a/1", 1000, 1000), fault(2, faultlog.Pause, "a/7", 5000, 8000)},
			want:    map[int]split{1: {Moved: 1}, 2: {}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := Check(Input{Records: tt.records, Faults: tt.faults, Until: ms(90000)})
			got := map[int]split{}
			for _, x := range r.Takeovers {
				got[x.Fault.ID] = split{x.Moved, x.Later}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("moved and moved later, by fault -want +got:\n%s", diff)
			}
		})
	}
}
