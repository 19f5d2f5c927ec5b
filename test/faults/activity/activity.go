// Package activity is the probe operator's record of what it runs: one
// JSON line per start, heartbeat and end of every handler and daemon run,
// appended to a file with one write each, so that a process killed with
// SIGKILL loses nothing it recorded. The checker reads these files; the
// probe writes them. Both sides share only this format.
package activity

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"
)

// What ran.
const (
	Create = "create"
	Update = "update"
	Delete = "delete"
	Daemon = "daemon"
)

// The events of a run.
const (
	Start = "start"
	Beat  = "beat"
	End   = "end"
)

// Record is one line. Run and Done are additions to the suite's brief:
// Run pairs a run's records exactly even when two runs of one kind
// overlap in one process, and Done tells a run that finished its work
// from one that gave up when cancelled, for counting duplicate creates.
type Record struct {
	// Actor is POD_ID/pid: a restarted replica is another actor.
	Actor string `json:"actor"`
	// Object is namespace/name.
	Object string `json:"object"`
	UID    string `json:"uid"`
	What   string `json:"what"`
	Event  string `json:"event"`
	// At is time.Now().UnixNano() when the record was made.
	At int64 `json:"at"`
	// Run numbers the runs of one process from 1.
	Run int64 `json:"run"`
	// Done is set on the end of a run that completed its work.
	Done bool `json:"done,omitempty"`
}

// Time is At as a time.
func (r Record) Time() time.Time { return time.Unix(0, r.At) }

// Log appends records to a file.
type Log struct{ f *os.File }

// Open opens the file for appending, creating it if needed.
func Open(path string) (*Log, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open the activity log: %w", err)
	}
	return &Log{f: f}, nil
}

// Write appends one record with one unbuffered write: with O_APPEND, the
// kernel keeps concurrent writers' lines whole, and what was written
// survives the process.
func (l *Log) Write(r Record) error {
	line, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("render a record: %w", err)
	}
	if _, err := l.f.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("append a record: %w", err)
	}
	return nil
}

// Close closes the file.
func (l *Log) Close() error { return l.f.Close() }

// ReadFile reads a log. A last line without its newline is a write that
// was cut short, and is skipped; any other line that is not a record is
// an error.
func ReadFile(path string) ([]Record, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read the activity log: %w", err)
	}
	if i := bytes.LastIndexByte(data, '\n'); i < len(data)-1 {
		data = data[:i+1]
	}
	var out []Record
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		var r Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		out = append(out, r)
	}
	return out, sc.Err()
}

// ReadDir reads every *.jsonl file of the directory, in time order.
func ReadDir(dir string) ([]Record, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil {
		return nil, err
	}
	var out []Record
	for _, p := range paths {
		rs, err := ReadFile(p)
		if err != nil {
			return nil, err
		}
		out = append(out, rs...)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At < out[j].At })
	return out, nil
}

// The keys of a change handler's result, which the probe returns and the
// library stores in status.<handler id>: the actor that ran it and the
// run's number, so that the suite's watcher can tell which actor's write
// made a version of an object, and every result is new.
const (
	ResultActor = "actor"
	ResultRun   = "run"
)
