package checker

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kopf-go/kopf/test/faults/activity"
	"github.com/kopf-go/kopf/test/faults/faultlog"
)

// members of the hand-made rings: member names to POD_IDs.
var ringMembers = map[string]string{"m-a": "a", "m-a2": "a", "m-b": "b"}

// v is a version of ns/o (uid u) with its grant and results.
func v(rv, grant string, results map[string]Result) Version {
	return Version{Object: "ns/o", UID: "u", RV: rv, Owner: grant, Grant: grant, Results: results}
}

func res(actor string, run int64) Result { return Result{Actor: actor, Run: run} }

func TestLateWrites(t *testing.T) {
	type late struct{ RV, Handler, Writer, Grant string }
	tests := []struct {
		name     string
		versions []Version
		want     []late
		judged   int
		lives    Lives
	}{
		{
			name: "results of the granted member, then a move, then the new owner's",
			versions: []Version{
				v("1", "", nil),
				v("2", "m-a", nil),
				v("3", "m-a", map[string]Result{"create": res("a/10", 1)}),
				v("4", "m-b", map[string]Result{"create": res("a/10", 1)}), // the move keeps a's old result
				v("5", "m-b", map[string]Result{"create": res("a/10", 1), "update": res("b/20", 1)}),
			},
			judged: 2,
		},
		{
			name: "a result of the old owner lands after the move",
			versions: []Version{
				v("2", "m-a", nil),
				v("3", "m-b", nil),
				v("4", "m-b", map[string]Result{"update": res("a/10", 7)}),
			},
			want:   []late{{"4", "update", "a/10", "m-b"}},
			judged: 1,
		},
		{
			name: "the grant comes back to the writer's member: its results are in order again",
			versions: []Version{
				v("2", "m-a", map[string]Result{"update": res("a/10", 1)}),
				v("3", "m-b", map[string]Result{"update": res("a/10", 1)}),
				v("4", "m-a", map[string]Result{"update": res("a/10", 1)}),
				v("5", "m-a", map[string]Result{"update": res("a/10", 2)}),
			},
			judged: 1,
		},
		{
			name: "a restarted actor of the same POD_ID under a new member name",
			versions: []Version{
				v("2", "m-a", nil),
				v("3", "m-a2", nil),
				v("4", "m-a2", map[string]Result{"update": res("a/11", 1)}),
				v("5", "m-b", map[string]Result{"update": res("a/11", 1)}),
				v("6", "m-b", map[string]Result{"update": res("a/10", 9)}), // the old actor's, delivered late
			},
			want:   []late{{"6", "update", "a/10", "m-b"}},
			judged: 2,
		},
		{
			name: "a former owner's run begun after the new owner's replica exited is its adopter's: not judged",
			versions: []Version{
				v("2", "m-a", nil),
				v("3", "m-b", nil),
				v("4", "m-b", map[string]Result{"update": res("a/11", 3)}),
			},
			lives: Lives{
				Runs:      map[Result]int64{res("a/11", 3): 500},
				Processes: map[string][]Interval{"a": {{From: 0, To: 1000}}, "b": {{From: 100, To: 400}}},
			},
			judged: 0,
		},
		{
			name: "a former owner's run begun while the new owner's replica ran is judged, though it exited before the write landed",
			versions: []Version{
				v("2", "m-a", nil),
				v("3", "m-b", nil),
				v("4", "m-b", map[string]Result{"update": res("a/11", 3)}),
			},
			lives: Lives{
				Runs:      map[Result]int64{res("a/11", 3): 300},
				Processes: map[string][]Interval{"a": {{From: 0, To: 1000}}, "b": {{From: 100, To: 400}}},
			},
			want:   []late{{"4", "update", "a/11", "m-b"}},
			judged: 1,
		},
		{
			name: "a run begun while the new owner's replica ran again, restarted, is judged",
			versions: []Version{
				v("2", "m-a", nil),
				v("3", "m-b", nil),
				v("4", "m-b", map[string]Result{"update": res("a/11", 3)}),
			},
			lives: Lives{
				Runs:      map[Result]int64{res("a/11", 3): 700},
				Processes: map[string][]Interval{"a": {{From: 0, To: 1000}}, "b": {{From: 100, To: 400}, {From: 650, To: 1000}}},
			},
			want:   []late{{"4", "update", "a/11", "m-b"}},
			judged: 1,
		},
		{
			// The new owner's replica runs again, restarted under another
			// member name: its old member was retired, and the former owner
			// adopts the object (make chaos: an adopter's create result on
			// an object whose deletion began meanwhile, which is not
			// claimed).
			name: "a run begun after the new owner's member's Lease was gone is its adopter's, though its replica runs again: not judged",
			versions: []Version{
				v("2", "m-a", nil),
				v("3", "m-b", nil),
				v("4", "m-b", map[string]Result{"create": res("a/11", 3)}),
			},
			lives: Lives{
				Runs:      map[Result]int64{res("a/11", 3): 700},
				Processes: map[string][]Interval{"a": {{From: 0, To: 1000}}, "b": {{From: 100, To: 400}, {From: 650, To: 1000}}},
				Held:      map[string]int64{"m-b": 380}, Poll: 200,
			},
			judged: 0,
		},
		{
			name: "a run begun within a poll of the last sighting of the new owner's member's Lease is judged",
			versions: []Version{
				v("2", "m-a", nil),
				v("3", "m-b", nil),
				v("4", "m-b", map[string]Result{"create": res("a/11", 3)}),
			},
			lives: Lives{
				Runs:      map[Result]int64{res("a/11", 3): 700},
				Processes: map[string][]Interval{"a": {{From: 0, To: 1000}}, "b": {{From: 100, To: 400}, {From: 650, To: 1000}}},
				Held:      map[string]int64{"m-b": 550}, Poll: 200,
			},
			want:   []late{{"4", "create", "a/11", "m-b"}},
			judged: 1,
		},
		{
			name: "results of a writer that never held the grant (another ring's, under keys the rule does not read) are not judged",
			versions: []Version{
				v("2", "", nil),
				v("3", "", map[string]Result{"create": res("a/10", 1)}),
				v("4", "m-x", map[string]Result{"create": res("a/10", 1)}),
				v("5", "m-x", map[string]Result{"create": res("a/10", 2)}),
			},
			judged: 0,
		},
		{
			name: "delete results are not judged: an adopter completes a deletion under the retired member's grant",
			versions: []Version{
				v("2", "m-a", map[string]Result{"create": res("a/10", 1)}),
				v("3", "m-b", map[string]Result{"create": res("a/10", 1)}),
				v("4", "m-b", map[string]Result{"create": res("a/10", 1), "delete": res("a/10", 1)}),
			},
			judged: 0,
		},
		{
			name: "an adopter works under the retired member's grant, then claims; the retired member's late result is late",
			versions: []Version{
				v("2", "m-a", map[string]Result{"create": res("a/10", 1)}),
				v("3", "m-a", map[string]Result{"create": res("a/10", 1), "delete": res("b/20", 1)}), // b adopted a's object
				v("4", "m-b", map[string]Result{"create": res("a/10", 1), "delete": res("b/20", 1)}), // b's claim
				v("5", "m-b", map[string]Result{"create": res("a/10", 2), "delete": res("b/20", 1)}), // a's, delivered late
			},
			want:   []late{{"5", "create", "a/10", "m-b"}},
			judged: 1,
		},
		{
			name: "a write that moves the grant and carries the writer's result was written on the writer's version",
			versions: []Version{
				v("2", "m-a", nil),
				v("3", "m-b", map[string]Result{"update": res("a/10", 3)}),
				v("4", "m-b", map[string]Result{"update": res("b/20", 1)}),
			},
			judged: 2,
		},
		{
			name: "a version after a gap of the watcher is not judged",
			versions: []Version{
				v("3", "m-b", nil),
				{Object: "ns/o", UID: "u", RV: "9", Grant: "m-b", Results: map[string]Result{"update": res("a/10", 1)}, AfterGap: true},
			},
			judged: 0,
		},
		{
			name: "another object of the same name is another sequence",
			versions: []Version{
				v("2", "m-b", nil),
				{Object: "ns/o", UID: "u2", RV: "5", Grant: "m-a", Results: map[string]Result{"create": res("a/10", 1)}},
			},
			judged: 0,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, judged := LateWrites(tt.versions, ringMembers, tt.lives)
			var short []late
			for _, l := range got {
				short = append(short, late{l.RV, l.Handler, l.Writer, l.Grant})
			}
			if diff := cmp.Diff(tt.want, short); diff != "" {
				t.Errorf("late writes -want +got:\n%s", diff)
			}
			if judged != tt.judged {
				t.Errorf("judged %d new results, want %d", judged, tt.judged)
			}
		})
	}
}

// The report counts and names the late writes.
func TestLateWritesInTheReport(t *testing.T) {
	versions := []Version{v("2", "m-a", nil), v("3", "m-b", nil), v("4", "m-b", map[string]Result{"update": res("a/10", 7)})}
	r := Check(Input{Versions: versions, Members: ringMembers})
	if len(r.LateWrites) != 1 || r.Judged != 1 {
		t.Fatalf("late writes %+v, judged %d", r.LateWrites, r.Judged)
	}
	text := r.Text()
	for _, want := range []string{
		"late writes: 1 (of 1 new results judged; 0 versions after a gap of the watcher not judged)\n",
		`LATE WRITE ns/o (u) at +0.000s: the update result of a/10 landed as version 4 on a version granted to "m-b" (b)`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the report lacks %q:\n%s", want, text)
		}
	}
}

// Check reads the runs' starts from the records and the lifetimes from
// the fault log: the former owner that adopts a departed member's object
// is not reported, and the same result by a run begun before the
// departure is.
func TestLateWritesKnowTheDepartedFromTheFaultLog(t *testing.T) {
	versions := []Version{v("2", "m-a", nil), v("3", "m-b", nil), v("4", "m-b", map[string]Result{"update": res("a/10", 7)})}
	log := []faultlog.Entry{
		{Kind: faultlog.ProcessStart, Replica: "a", Actor: "a/10", Start: 0},
		{Kind: faultlog.ProcessStart, Replica: "b", Actor: "b/20", Start: 100},
		{Kind: faultlog.ProcessExit, Replica: "b", Actor: "b/20", Start: 400},
	}
	for _, tt := range []struct {
		began int64
		late  int
	}{{began: 500, late: 0}, {began: 300, late: 1}} {
		records := []activity.Record{
			{Actor: "a/10", Object: "ns/o", UID: "u", What: "update", Event: activity.Start, At: tt.began, Run: 7},
			{Actor: "a/10", Object: "ns/o", UID: "u", What: "update", Event: activity.End, At: tt.began + 10, Run: 7, Done: true},
		}
		r := Check(Input{Records: records, Faults: log, Until: 1000, Versions: versions, Members: ringMembers})
		if len(r.LateWrites) != tt.late {
			t.Errorf("a run begun at %d: late writes %+v, want %d", tt.began, r.LateWrites, tt.late)
		}
	}
}
