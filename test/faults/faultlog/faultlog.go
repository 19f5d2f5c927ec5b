// Package faultlog is the suite's record of what it did to the replicas:
// every injected fault with its wall-clock start and end and its target,
// and every start and exit of a replica's process, as JSON lines. The
// checker reads it beside the probes' activity records; both use one
// machine's clock, so their moments compare directly.
package faultlog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"sync"
	"time"
)

// The faults (nemeses).
const (
	PartitionRefuse = "partition-refuse" // the replica's proxy refuses connections
	PartitionHang   = "partition-hang"   // the replica's proxy black-holes them
	Kill            = "sigkill"          // SIGKILL, restarted once the objects moved
	Pause           = "sigstop"          // SIGSTOP for longer than a lease, then SIGCONT
	TermIgnored     = "sigterm-ignored"  // SIGTERM to a replica whose daemons ignore their stop
	LeaseDeleted    = "lease-deleted"    // the member's Lease deleted by hand
	LabelEdited     = "label-edited"     // an object's owner label set by hand to another live member
	RestartAtOnce   = "restart-at-once"  // SIGKILL, then the same POD_ID at once
	RestartBefore   = "restart-before"   // ... a second before the lease expires
	RestartAt       = "restart-at"       // ... when it expires
	RestartAfter    = "restart-after"    // ... a second after
	Join            = "churn-join"       // a new replica joins the ring
	Leave           = "churn-leave"      // a replica leaves it gracefully (SIGTERM)
	SecondRing      = "second-ring"      // a ring of the same name with its Leases elsewhere
	// NameReused: a replica joins, and objects of a kind whose handlers
	// need no finalizer, in buckets that the join moves to it, are
	// deleted and created anew under their names while their old owner
	// still works on them. Two incarnations of one name are one object
	// to the checker: the ring must keep the name taken until the old
	// owner is done.
	NameReused = "name-reused"
	// Through the replica's L7 proxy: one class of its requests, while
	// the rest of its connection works.
	LeaseWatchStalled = "lease-watch-stalled" // its watch of Leases stalls (its renewals go on)
	ShareWatchStalled = "share-watch-stalled" // its watch of its objects stalls (its Lease renews)
	WriteDelayed      = "write-delayed"       // its writes held, then delivered after the objects moved
)

// The lifecycle of processes, logged beside the faults: not faults.
const (
	ProcessStart = "process-start"
	ProcessExit  = "process-exit"
)

// Kinds lists every fault, in the order the reports show them.
var Kinds = []string{PartitionRefuse, PartitionHang, Kill, Pause, TermIgnored, LeaseDeleted, LabelEdited,
	RestartAtOnce, RestartBefore, RestartAt, RestartAfter, Join, Leave, NameReused, SecondRing,
	LeaseWatchStalled, ShareWatchStalled, WriteDelayed}

// Entry is one fault or lifecycle event.
type Entry struct {
	ID   int    `json:"id"`
	Kind string `json:"kind"`
	// Replica is the target's POD_ID; Actor is its process (POD_ID/pid)
	// when the fault began: the actor whose objects should move.
	Replica string `json:"replica,omitempty"`
	Actor   string `json:"actor,omitempty"`
	// Assigner says that the target's replica held the ring's assigner
	// Lease when the fault began.
	Assigner bool `json:"assigner,omitempty"`
	// Members are the replicas a fault brings in (a second ring's).
	Members []string `json:"members,omitempty"`
	// Object is the object of a fault that hits one (namespace/name).
	Object string `json:"object,omitempty"`
	// Start and End are UnixNano; End is 0 while the fault lasts.
	Start int64  `json:"start"`
	End   int64  `json:"end,omitempty"`
	Note  string `json:"note,omitempty"`
	// Failed says why a fault that was begun did not happen after all
	// (its object or Lease went away first, say).
	Failed string `json:"failed,omitempty"`
}

// IsFault tells injected faults from lifecycle events and from faults
// that failed.
func (e Entry) IsFault() bool {
	return e.Kind != ProcessStart && e.Kind != ProcessExit && e.Failed == ""
}

// Span is the fault's start and end; an open fault ends at until.
func (e Entry) Span(until int64) (int64, int64) {
	if e.End == 0 {
		return e.Start, max(until, e.Start)
	}
	return e.Start, e.End
}

// Log appends entries to a file, a line when a fault begins and another
// when it ends, so that a fault that is still on when the suite dies is
// in the file too. It is safe for concurrent use.
type Log struct {
	mu      sync.Mutex
	f       *os.File
	next    int
	entries map[int]*Entry
	// Echo, if set, hears every line written, for the suite's own output.
	Echo func(Entry)
}

// Open creates (or truncates) the log file.
func Open(path string) (*Log, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("create the fault log: %w", err)
	}
	return &Log{f: f, entries: map[int]*Entry{}}, nil
}

// Begin logs the start of e now (unless e.Start is set) and returns its id.
func (l *Log) Begin(e Entry) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.next++
	e.ID = l.next
	if e.Start == 0 {
		e.Start = time.Now().UnixNano()
	}
	l.entries[e.ID] = &e
	l.write(e)
	return e.ID
}

// End logs the end of the fault now, adding to its note.
func (l *Log) End(id int, note string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.entries[id]
	if !ok || e.End != 0 {
		return
	}
	e.End = time.Now().UnixNano()
	if note != "" {
		if e.Note != "" {
			e.Note += "; "
		}
		e.Note += note
	}
	l.write(*e)
}

// Fail logs that the fault did not happen after all, and why.
func (l *Log) Fail(id int, why string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.entries[id]
	if !ok || e.End != 0 {
		return
	}
	e.End, e.Failed = time.Now().UnixNano(), why
	l.write(*e)
}

// Event logs something that happens at once (a start or exit of a
// process, a fault without duration).
func (l *Log) Event(e Entry) int {
	now := time.Now().UnixNano()
	if e.Start == 0 {
		e.Start = now
	}
	e.End = e.Start
	return l.Begin(e)
}

// Entries returns everything logged so far, by id.
func (l *Log) Entries() []Entry {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]Entry, 0, len(l.entries))
	for _, e := range l.entries {
		out = append(out, *e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Close closes the file.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f.Close()
}

// write appends e as a line; l.mu is held. A failed write is reported
// through Echo's entry note only in memory: the suite keeps going.
func (l *Log) write(e Entry) {
	line, _ := json.Marshal(e)
	if _, err := l.f.Write(append(line, '\n')); err != nil {
		e.Note += fmt.Sprintf(" (not written to the log: %v)", err)
	}
	if l.Echo != nil {
		l.Echo(e)
	}
}

// ReadFile reads a log: the last line of each id wins.
func ReadFile(path string) ([]Entry, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read the fault log: %w", err)
	}
	byID := map[int]Entry{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		var e Entry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		byID[e.ID] = e
	}
	out := make([]Entry, 0, len(byID))
	for _, e := range byID {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, sc.Err()
}
