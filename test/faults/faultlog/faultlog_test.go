package faultlog

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// What the log holds in memory is what a reader of its file finds: the
// last line of each fault.
func TestLogRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "faults.jsonl")
	l, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	var echoed []string
	l.Echo = func(e Entry) { echoed = append(echoed, e.Kind) }
	a := l.Begin(Entry{Kind: Pause, Replica: "r1", Actor: "r1/10", Start: 100})
	l.Event(Entry{Kind: ProcessExit, Replica: "r2", Actor: "r2/11", Start: 150, Note: "exit status 1"})
	b := l.Begin(Entry{Kind: PartitionHang, Replica: "r3", Actor: "r3/12", Start: 200, Note: "hang"})
	c := l.Begin(Entry{Kind: LabelEdited, Replica: "r4", Actor: "r4/13", Object: "ns/o", Start: 300})
	l.Fail(c, "not found")
	l.End(a, "SIGCONT")
	l.End(a, "twice") // a fault ends once
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(l.Entries(), got); diff != "" {
		t.Errorf("the file -memory +file:\n%s", diff)
	}
	if got[0].End == 0 || got[0].Note != "SIGCONT" || got[2].End != 0 || got[2].ID != b {
		t.Errorf("entries %+v: want the pause ended with its note, the hang still on", got)
	}
	if got[1].End != 150 || got[1].IsFault() {
		t.Errorf("the exit %+v: want an instant that is not a fault", got[1])
	}
	if got[3].Failed != "not found" || got[3].IsFault() {
		t.Errorf("the failed edit %+v: want it failed, not a fault", got[3])
	}
	if diff := cmp.Diff([]string{Pause, ProcessExit, PartitionHang, LabelEdited, LabelEdited, Pause}, echoed); diff != "" {
		t.Errorf("echoed -want +got:\n%s", diff)
	}
	if s, e := got[2].Span(500); s != 200 || e != 500 {
		t.Errorf("the open fault's span = %d..%d, want 200..500", s, e)
	}
}
