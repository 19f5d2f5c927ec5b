package daemons

import (
	"strings"
	"sync"

	"github.com/go-logr/logr"
)

// logLine is one captured log call: "debug" for V(1) and deeper, "info",
// or "error".
type logLine struct {
	Level string
	Msg   string
}

// captureSink is a logr.LogSink that records every line, shared by all the
// loggers derived from it.
type captureSink struct {
	mu    *sync.Mutex
	lines *[]logLine
	// stacked are the messages of error lines that carry a stack.
	stacked *[]string
}

func newCapture() *captureSink {
	return &captureSink{mu: &sync.Mutex{}, lines: &[]logLine{}, stacked: &[]string{}}
}

// Stacked returns the messages of the error lines that carry a goroutine's
// stack in their "stack" value.
func (s *captureSink) Stacked() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), *s.stacked...)
}

// All returns a copy of every line logged so far.
func (s *captureSink) All() []logLine {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]logLine(nil), *s.lines...)
}

// Find returns the lines whose message contains the text.
func (s *captureSink) Find(text string) []logLine {
	var out []logLine
	for _, l := range s.All() {
		if strings.Contains(l.Msg, text) {
			out = append(out, l)
		}
	}
	return out
}

func (s *captureSink) Init(logr.RuntimeInfo) {}

func (s *captureSink) Enabled(int) bool { return true }

func (s *captureSink) Info(level int, msg string, _ ...any) {
	lvl := "info"
	if level > 0 {
		lvl = "debug"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	*s.lines = append(*s.lines, logLine{Level: lvl, Msg: msg})
}

func (s *captureSink) Error(_ error, msg string, keysAndValues ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	*s.lines = append(*s.lines, logLine{Level: "error", Msg: msg})
	for i := 0; i+1 < len(keysAndValues); i += 2 {
		if stack, ok := keysAndValues[i+1].(string); keysAndValues[i] == "stack" && ok && strings.Contains(stack, "goroutine ") {
			*s.stacked = append(*s.stacked, msg)
		}
	}
}

func (s *captureSink) WithValues(...any) logr.LogSink { return s }

func (s *captureSink) WithName(string) logr.LogSink { return s }
