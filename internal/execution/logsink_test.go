package execution

import (
	"context"
	"sync"

	"github.com/go-logr/logr"
)

// logLine is one captured log call: "debug" for V(1) and deeper, "info",
// or "error"; WithErr tells whether an error value was attached (Kopf's
// logger.exception versus logger.error).
type logLine struct {
	Level   string
	Msg     string
	WithErr bool
	Keys    []string
}

// captureSink is a logr.LogSink that records every line, shared by all the
// loggers derived from it.
type captureSink struct {
	mu     *sync.Mutex
	lines  *[]logLine
	values []any
}

func newCapture() *captureSink {
	return &captureSink{mu: &sync.Mutex{}, lines: &[]logLine{}}
}

// context returns a context carrying a logger that writes into the sink.
func (s *captureSink) context() context.Context {
	return logr.NewContext(context.Background(), logr.New(s))
}

// Lines returns what was logged, without the debug lines.
func (s *captureSink) Lines() []logLine {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []logLine
	for _, l := range *s.lines {
		if l.Level != "debug" {
			out = append(out, l)
		}
	}
	return out
}

// Debug returns the messages of the debug lines.
func (s *captureSink) Debug() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, l := range *s.lines {
		if l.Level == "debug" {
			out = append(out, l.Msg)
		}
	}
	return out
}

func (s *captureSink) record(l logLine, kv []any) {
	all := append(append([]any{}, s.values...), kv...)
	for i := 0; i+1 < len(all); i += 2 {
		if k, ok := all[i].(string); ok {
			l.Keys = append(l.Keys, k)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	*s.lines = append(*s.lines, l)
}

func (s *captureSink) Init(logr.RuntimeInfo) {}

func (s *captureSink) Enabled(int) bool { return true }

func (s *captureSink) Info(level int, msg string, kv ...any) {
	lvl := "info"
	if level > 0 {
		lvl = "debug"
	}
	s.record(logLine{Level: lvl, Msg: msg}, kv)
}

func (s *captureSink) Error(err error, msg string, kv ...any) {
	s.record(logLine{Level: "error", Msg: msg, WithErr: err != nil}, kv)
}

func (s *captureSink) WithValues(kv ...any) logr.LogSink {
	return &captureSink{mu: s.mu, lines: s.lines, values: append(append([]any{}, s.values...), kv...)}
}

func (s *captureSink) WithName(string) logr.LogSink { return s }
