package kopftest

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
)

// Logs captures an operator's log lines (and echoes them into the test's
// log, shown on failure or with -v).
type Logs struct {
	t       testing.TB
	mu      sync.Mutex
	entries []Entry
	closed  bool
}

// Entry is one log line.
type Entry struct {
	// Time is when the line was logged (the wall clock, whatever clock
	// the operator was given): to tell how long apart two lines are.
	Time    time.Time
	Level   int
	Error   bool
	Message string
	Values  []any
}

func (l *Logs) Init(logr.RuntimeInfo)  {}
func (l *Logs) Enabled(level int) bool { return level <= 1 }

func (l *Logs) Info(level int, msg string, kv ...any) {
	l.add(Entry{Level: level, Message: msg, Values: kv})
}

func (l *Logs) Error(err error, msg string, kv ...any) {
	if err != nil {
		kv = append(kv, "error", err.Error())
	}
	l.add(Entry{Error: true, Message: msg, Values: kv})
}

func (l *Logs) WithValues(kv ...any) logr.LogSink {
	return &childLogs{root: l, values: kv}
}

func (l *Logs) WithName(name string) logr.LogSink { return &childLogs{root: l} }

func (l *Logs) add(e Entry) {
	e.Time = time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entries = append(l.entries, e)
	if !l.closed {
		l.t.Logf("%s %s %v", e.Time.Format("15:04:05.000"), e.Message, e.Values)
	}
}

// Messages returns the messages logged so far that contain the substring.
func (l *Logs) Messages(substring string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, e := range l.entries {
		if strings.Contains(e.Message, substring) {
			out = append(out, e.Message)
		}
	}
	return out
}

// Entries returns the entries logged so far whose message contains the
// substring, with their values (an error's text under "error").
func (l *Logs) Entries(substring string) []Entry {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Entry
	for _, e := range l.entries {
		if strings.Contains(e.Message, substring) {
			out = append(out, e)
		}
	}
	return out
}

// About returns the messages logged about the object with the given name
// (those carrying it as their "name" value).
func (l *Logs) About(name string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, e := range l.entries {
		for i := 0; i+1 < len(e.Values); i += 2 {
			if e.Values[i] == "name" && e.Values[i+1] == name {
				out = append(out, e.Message)
			}
		}
	}
	return out
}

// Count returns how many messages equal the given one exactly.
func (l *Logs) Count(message string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, e := range l.entries {
		if e.Message == message {
			n++
		}
	}
	return n
}

// childLogs carries values added with WithValues into the root's entries.
type childLogs struct {
	root   *Logs
	values []any
}

func (c *childLogs) Init(logr.RuntimeInfo)  {}
func (c *childLogs) Enabled(level int) bool { return level <= 1 }
func (c *childLogs) Info(level int, msg string, kv ...any) {
	c.root.Info(level, msg, append(append([]any{}, c.values...), kv...)...)
}
func (c *childLogs) Error(err error, msg string, kv ...any) {
	c.root.Error(err, msg, append(append([]any{}, c.values...), kv...)...)
}
func (c *childLogs) WithValues(kv ...any) logr.LogSink {
	return &childLogs{root: c.root, values: append(append([]any{}, c.values...), kv...)}
}
func (c *childLogs) WithName(string) logr.LogSink { return c }
