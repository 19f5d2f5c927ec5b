package checker

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kopf-go/kopf/test/faults/activity"
	"github.com/kopf-go/kopf/test/faults/faultlog"
)

// ms is a moment given in milliseconds since an arbitrary zero.
func ms(n int64) int64 { return n * int64(time.Millisecond) }

// nextRun numbers the runs of the hand-written record sets.
var nextRun int64

// running is a run of what by actor on object from..to (ms), beating
// every 50 ms, with an end record if ended (done: its work complete).
func running(actor, object, what string, from, to int64, ended, done bool) []activity.Record {
	nextRun++
	uid := "uid-" + object
	rec := func(event string, at int64) activity.Record {
		return activity.Record{Actor: actor, Object: object, UID: uid, What: what, Event: event, At: ms(at), Run: nextRun}
	}
	out := []activity.Record{rec(activity.Start, from)}
	for t := from + 50; t < to; t += 50 {
		out = append(out, rec(activity.Beat, t))
	}
	last := rec(activity.Beat, to)
	if ended {
		last = rec(activity.End, to)
		last.Done = done
	}
	return append(out, last)
}

// daemon is a daemon's run, ended or cut off at to.
func daemon(actor, object string, from, to int64, ended bool) []activity.Record {
	return running(actor, object, activity.Daemon, from, to, ended, false)
}

func concat(sets ...[]activity.Record) []activity.Record {
	var out []activity.Record
	for _, s := range sets {
		out = append(out, s...)
	}
	return out
}

func fault(id int, kind, actor string, start, end int64) faultlog.Entry {
	replica, _, _ := strings.Cut(actor, "/")
	return faultlog.Entry{ID: id, Kind: kind, Replica: replica, Actor: actor, Start: ms(start), End: ms(end)}
}

// paused drops the records that the pause stop..cont (ms) would have
// prevented: the process ran none of its goroutines then.
func paused(records []activity.Record, stop, cont int64) []activity.Record {
	var out []activity.Record
	for _, r := range records {
		if r.At <= ms(stop) || r.At > ms(cont) {
			out = append(out, r)
		}
	}
	return out
}

// overlap is an Overlap without its faults, in ms.
type overlap struct {
	Object, A, B string
	From, To     int64
}

func TestOverlaps(t *testing.T) {
	tests := []struct {
		name    string
		records []activity.Record
		faults  []faultlog.Entry
		want    []overlap
	}{
		{name: "a handover: the old owner ends before the new one starts",
			records: concat(daemon("a/1", "ns/o", 0, 1000, true), daemon("b/2", "ns/o", 1100, 3000, true))},
		{name: "two owners at once",
			records: concat(daemon("a/1", "ns/o", 0, 2000, true), daemon("b/2", "ns/o", 1500, 3000, true)),
			want:    []overlap{{"ns/o", "a/1", "b/2", 1500, 2000}}},
		{name: "a killed run lasts until its last record",
			records: concat(daemon("a/1", "ns/o", 0, 1000, false), daemon("b/2", "ns/o", 1000, 3000, true))},
		{name: "a killed run overlaps up to its last record",
			records: concat(daemon("a/1", "ns/o", 0, 1000, false), daemon("b/2", "ns/o", 900, 3000, true)),
			want:    []overlap{{"ns/o", "a/1", "b/2", 900, 1000}}},
		{name: "a create handler beside a daemon of another actor",
			records: concat(running("a/1", "ns/o", activity.Create, 0, 3000, true, true), daemon("b/2", "ns/o", 2950, 4000, true)),
			want:    []overlap{{"ns/o", "a/1", "b/2", 2950, 3000}}},
		{name: "one actor's handler and daemon overlap: that is one replica",
			records: concat(running("a/1", "ns/o", activity.Create, 0, 3000, true, true), daemon("a/1", "ns/o", 100, 4000, true))},
		{name: "a restarted replica is another actor",
			records: concat(daemon("a/1", "ns/o", 0, 1000, false), daemon("a/2", "ns/o", 500, 3000, true)),
			want:    []overlap{{"ns/o", "a/1", "a/2", 500, 1000}}},
		{name: "other objects do not overlap",
			records: concat(daemon("a/1", "ns/o", 0, 2000, true), daemon("b/2", "ns/p", 0, 2000, true))},
		{name: "a paused actor does nothing in its pause",
			records: concat(paused(daemon("a/1", "ns/o", 0, 5100, true), 1000, 5000), daemon("b/2", "ns/o", 3000, 4900, true)),
			faults:  []faultlog.Entry{fault(1, faultlog.Pause, "a/1", 1000, 5000)}},
		{name: "activity past the window after SIGCONT is an overlap",
			records: concat(paused(daemon("a/1", "ns/o", 0, 6000, true), 1000, 5000), daemon("b/2", "ns/o", 3000, 8000, true)),
			faults:  []faultlog.Entry{fault(1, faultlog.Pause, "a/1", 1000, 5000)},
			want:    []overlap{{"ns/o", "a/1", "b/2", 5250, 6000}}},
		{name: "a run that begins right after the SIGCONT is after-resume activity, not an overlap",
			records: concat(paused(daemon("a/1", "ns/o", 0, 1000, false), 1000, 5000), daemon("a/1", "ns/o", 5020, 5200, true),
				daemon("b/2", "ns/o", 3000, 8000, true)),
			faults: []faultlog.Entry{fault(1, faultlog.Pause, "a/1", 1000, 5000)}},
		{name: "a pause still on at the end hides nothing before it",
			records: concat(daemon("a/1", "ns/o", 0, 1000, false), daemon("b/2", "ns/o", 800, 8000, true)),
			faults:  []faultlog.Entry{fault(1, faultlog.Pause, "a/1", 1000, 0)},
			want:    []overlap{{"ns/o", "a/1", "b/2", 800, 1000}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Check(Input{Records: tt.records, Faults: tt.faults, Until: ms(10000)})
			var got []overlap
			for _, o := range r.Overlaps {
				got = append(got, overlap{o.Object, o.A, o.B, o.From / int64(time.Millisecond), o.To / int64(time.Millisecond)})
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("overlaps -want +got:\n%s", diff)
			}
		})
	}
}

// An overlap names the faults near it and the two actors' process
// events, not other replicas' ones nor faults long over.
func TestOverlapAround(t *testing.T) {
	faults := []faultlog.Entry{
		fault(1, faultlog.LeaseDeleted, "a/1", 900, 900),
		{ID: 2, Kind: faultlog.ProcessExit, Replica: "a", Actor: "a/1", Start: ms(2100), End: ms(2100)},
		{ID: 3, Kind: faultlog.ProcessExit, Replica: "c", Actor: "c/3", Start: ms(2100), End: ms(2100)},
		fault(4, faultlog.Kill, "c/3", -60000, -50000),
		fault(5, faultlog.Kill, "c/4", 5000, 5000),
	}
	r := Check(Input{Records: concat(daemon("a/1", "ns/o", 0, 2000, true), daemon("b/2", "ns/o", 1500, 3000, true)), Faults: faults})
	if len(r.Overlaps) != 1 {
		t.Fatalf("overlaps = %+v, want one", r.Overlaps)
	}
	var got []int
	for _, f := range r.Overlaps[0].Around {
		got = append(got, f.ID)
	}
	if diff := cmp.Diff([]int{1, 2}, got); diff != "" {
		t.Errorf("faults around -want +got:\n%s", diff)
	}
	if r.Overlaps[0].Cause.ID != 1 {
		t.Errorf("the cause is %+v, want the Lease's deletion", r.Overlaps[0].Cause)
	}
	if !strings.Contains(r.Text(), "OVERLAP ns/o: a/1 and b/2 both active from +61.500s to +62.000s (500 ms)\n    cause: #1 lease-deleted") {
		t.Errorf("the text lacks the overlap:\n%s", r.Text())
	}
}

// The cause of an overlap is the latest fault that hit one of its
// actors, or brought one in, before it ended; else the latest around.
func TestOverlapCause(t *testing.T) {
	records := concat(daemon("a/1", "ns/o", 0, 2000, true), daemon("second-0/9", "ns/o", 1500, 3000, true))
	tests := []struct {
		name   string
		faults []faultlog.Entry
		want   int
	}{
		{name: "a fault of one of the actors wins over a later one of another",
			faults: []faultlog.Entry{fault(1, faultlog.Pause, "a/1", 100, 200), fault(2, faultlog.Kill, "c/3", 1000, 1000)}, want: 1},
		{name: "a fault of an earlier process of the replica is no hit",
			faults: []faultlog.Entry{fault(1, faultlog.Kill, "a/0", 100, 100), fault(2, faultlog.Kill, "c/3", 1000, 1000),
				{ID: 3, Kind: faultlog.Join, Replica: "second-0", Start: ms(500), End: ms(600)}}, want: 3},
		{name: "a fault of the old owner wins over a later one of the new",
			faults: []faultlog.Entry{fault(1, faultlog.LeaseDeleted, "a/1", 1000, 1000), fault(2, faultlog.Kill, "second-0/9", 1200, 1200)}, want: 1},
		{name: "a label edit of another object is no hit",
			faults: []faultlog.Entry{fault(1, faultlog.Kill, "second-0/9", 1000, 1000),
				{ID: 2, Kind: faultlog.LabelEdited, Actor: "a/1", Object: "ns/p", Start: ms(1100), End: ms(1100)}}, want: 1},
		{name: "a second ring brought the other actor in",
			faults: []faultlog.Entry{{ID: 1, Kind: faultlog.SecondRing, Members: []string{"second-0", "second-1"}, Start: ms(900)},
				fault(2, faultlog.Kill, "c/3", 1000, 1000)}, want: 1},
		{name: "a second ring wins over a join of the old owner",
			faults: []faultlog.Entry{{ID: 1, Kind: faultlog.Join, Replica: "a", Start: ms(100), End: ms(200)},
				{ID: 2, Kind: faultlog.SecondRing, Members: []string{"second-0"}, Start: ms(900)}}, want: 2},
		{name: "a second ring around wins over the join of one of the actors",
			faults: []faultlog.Entry{{ID: 1, Kind: faultlog.Join, Replica: "a", Start: ms(100), End: ms(200)},
				{ID: 2, Kind: faultlog.SecondRing, Members: []string{"second-9"}, Start: ms(500)}}, want: 2},
		{name: "a second ring around, of which neither actor is a member",
			faults: []faultlog.Entry{fault(1, faultlog.Kill, "c/3", 100, 100), {ID: 2, Kind: faultlog.SecondRing, Members: []string{"second-9"}, Start: ms(500)},
				fault(3, faultlog.Kill, "d/4", 1000, 1000)}, want: 2},
		{name: "else no cause: no guess",
			faults: []faultlog.Entry{fault(1, faultlog.Kill, "c/3", 100, 100), fault(2, faultlog.Kill, "d/4", 1000, 1000)}, want: 0},
		{name: "a fault after the overlap is no cause",
			faults: []faultlog.Entry{fault(1, faultlog.Kill, "a/1", 2500, 2500)}, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Check(Input{Records: records, Faults: tt.faults, Until: ms(10000)})
			if len(r.Overlaps) != 1 || r.Overlaps[0].Cause.ID != tt.want {
				t.Errorf("overlaps %+v: want one caused by #%d", r.Overlaps, tt.want)
			}
		})
	}
}

func TestAfterResume(t *testing.T) {
	tests := []struct {
		name    string
		records []activity.Record
		want    []AfterResume
	}{
		{name: "a resumed daemon's last beats on a taken object",
			records: concat(paused(daemon("a/1", "ns/o", 0, 5120, true), 1000, 5000), paused(daemon("a/1", "ns/p", 0, 5120, true), 1000, 5000),
				daemon("b/2", "ns/o", 3000, 8000, true)),
			// ns/p was nobody else's: its beats after the SIGCONT are no one's concern.
			want: []AfterResume{{Actor: "a/1", Cont: ms(5000), Objects: []string{"ns/o"}, Records: 3, MaxDelay: 120 * time.Millisecond,
				Last: 120 * time.Millisecond}}},
		{name: "a run that begins right after the SIGCONT is resumed activity too",
			records: concat(paused(daemon("a/1", "ns/o", 0, 1000, false), 1000, 5000), daemon("a/1", "ns/o", 5020, 5200, true),
				daemon("b/2", "ns/o", 3000, 8000, true)),
			want: []AfterResume{{Actor: "a/1", Cont: ms(5000), Objects: []string{"ns/o"}, Records: 5, MaxDelay: 200 * time.Millisecond,
				Last: 200 * time.Millisecond}}},
		{name: "nothing after the SIGCONT",
			records: concat(daemon("a/1", "ns/o", 0, 1000, false), daemon("b/2", "ns/o", 3000, 8000, true))},
		{name: "the window's records only; the rest is an overlap",
			records: concat(paused(daemon("a/1", "ns/o", 0, 6000, true), 1000, 5000), daemon("b/2", "ns/o", 3000, 8000, true)),
			want: []AfterResume{{Actor: "a/1", Cont: ms(5000), Objects: []string{"ns/o"}, Records: 5, MaxDelay: 250 * time.Millisecond,
				Last: time.Second}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Check(Input{Records: tt.records, Faults: []faultlog.Entry{fault(1, faultlog.Pause, "a/1", 1000, 5000)}})
			if diff := cmp.Diff(tt.want, r.AfterResume); diff != "" {
				t.Errorf("after-resume -want +got:\n%s", diff)
			}
		})
	}
}

func TestDistribution(t *testing.T) {
	s := func(n ...int) []time.Duration {
		var out []time.Duration
		for _, x := range n {
			out = append(out, time.Duration(x)*time.Second)
		}
		return out
	}
	tests := []struct {
		in   []time.Duration
		want Distribution
	}{
		{nil, Distribution{}},
		{s(7), Distribution{1, 7 * time.Second, 7 * time.Second, 7 * time.Second, 7 * time.Second}},
		{s(4, 1, 3, 2), Distribution{4, time.Second, 2 * time.Second, 4 * time.Second, 4 * time.Second}},
		{s(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21),
			Distribution{21, time.Second, 11 * time.Second, 20 * time.Second, 21 * time.Second}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, distribution(tt.in)); diff != "" {
			t.Errorf("distribution(%v) -want +got:\n%s", tt.in, diff)
		}
	}
}

// The figures per kind: takeovers and gaps of the faults with victims,
// counts of those without, the overlaps near each kind, in the order of
// faultlog.Kinds.
func TestKinds(t *testing.T) {
	records := concat(
		daemon("a/1", "ns/o", 0, 1000, false), daemon("b/2", "ns/o", 16000, 40000, true),
		daemon("c/3", "ns/p", 0, 3000, true), daemon("d/4", "ns/p", 2000, 40000, true),
	)
	faults := []faultlog.Entry{
		fault(1, faultlog.LeaseDeleted, "c/3", 1000, 1000),
		fault(2, faultlog.Kill, "a/1", 1000, 1000),
		{ID: 3, Kind: faultlog.Join, Replica: "e", Start: ms(30000), End: ms(30000)},
	}
	r := Check(Input{Records: records, Faults: faults})
	want := []KindFigures{
		{Kind: faultlog.Kill, Faults: 1, Takeover: Distribution{1, 15 * time.Second, 15 * time.Second, 15 * time.Second, 15 * time.Second},
			Gap: Distribution{1, 15 * time.Second, 15 * time.Second, 15 * time.Second, 15 * time.Second}},
		{Kind: faultlog.LeaseDeleted, Faults: 1, Takeover: Distribution{1, time.Second, time.Second, time.Second, time.Second},
			Gap: Distribution{1, -time.Second, -time.Second, -time.Second, -time.Second}, Negative: 1, Overlaps: 1},
		{Kind: faultlog.Join, Faults: 1},
	}
	if diff := cmp.Diff(want, r.Kinds); diff != "" {
		t.Errorf("figures -want +got:\n%s", diff)
	}
	md := r.Markdown()
	for _, line := range []string{
		"| sigkill | 1 | 15.00 s / 15.00 s / 15.00 s (n=1) | 15.00 s / 15.00 s / 15.00 s / 15.00 s (n=1) | 0 | 0 | 0 | 0 |",
		"| lease-deleted | 1 | 1.00 s / 1.00 s / 1.00 s (n=1) | -1.00 s / -1.00 s / -1.00 s / -1.00 s (n=1) | 1 | 0 | 0 | 1 |",
		"| churn-join | 1 | – | – | 0 | 0 | 0 | 0 |",
	} {
		if !strings.Contains(md, line+"\n") {
			t.Errorf("the table lacks %q:\n%s", line, md)
		}
	}
}
