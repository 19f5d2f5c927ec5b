// Package lazylog gives a logger values that it binds only when it writes
// a line. A logger that lives as long as an object (a daemon's, a timer's)
// and rarely writes then costs a few words instead of the encoder state
// that structured loggers such as zap build on every WithValues.
package lazylog

import (
	"sync"

	"github.com/go-logr/logr"
)

// WithValues returns log with the key-value pairs added, bound only when a
// line is written: each line then costs the binding once more, so use it
// for loggers that are kept long and write little.
func WithValues(log logr.Logger, keysAndValues ...any) logr.Logger {
	return withValues(log, false, keysAndValues)
}

// ForCall is WithValues for the logger of one call that is dropped when
// the call returns, such as a reconcile's: the values are bound at its
// first line, and that binding is kept for the lines after it. A call
// that writes nothing (most reconciles) binds nothing; one that writes
// several lines binds once.
func ForCall(log logr.Logger, keysAndValues ...any) logr.Logger {
	return withValues(log, true, keysAndValues)
}

func withValues(log logr.Logger, keep bool, keysAndValues []any) logr.Logger {
	next := log.GetSink()
	if next == nil {
		return log // discards everything anyway
	}
	if s, ok := next.(*sink); ok {
		return log.WithSink(s.with(keysAndValues, keep || s.keep))
	}
	// This sink's own frame sits between the caller and next; like the
	// values, the extra depth is given to next only when a line is written
	// (for zap, it too would copy the logger).
	return log.WithSink(&sink{next: next, values: keysAndValues, depth: 1, keep: keep})
}

type sink struct {
	next   logr.LogSink
	values []any
	// depth is the call depth still to add to next.
	depth int
	// keep: the first line's binding is kept (kept) for the next lines.
	keep bool
	once sync.Once
	kept logr.LogSink
}

// bound is next with the depth and the values applied: made anew for
// every line, or once if the sink keeps it.
func (s *sink) bound() logr.LogSink {
	if !s.keep {
		return s.bind()
	}
	s.once.Do(func() { s.kept = s.bind() })
	return s.kept
}

func (s *sink) bind() logr.LogSink {
	next := s.next
	if cd, ok := next.(logr.CallDepthLogSink); ok && s.depth > 0 {
		next = cd.WithCallDepth(s.depth)
	}
	if len(s.values) > 0 {
		next = next.WithValues(s.values...)
	}
	return next
}

func (s *sink) Init(info logr.RuntimeInfo) { s.next.Init(info) }

func (s *sink) Enabled(level int) bool { return s.next.Enabled(level) }

func (s *sink) Info(level int, msg string, keysAndValues ...any) {
	s.bound().Info(level, msg, keysAndValues...)
}

func (s *sink) Error(err error, msg string, keysAndValues ...any) {
	s.bound().Error(err, msg, keysAndValues...)
}

func (s *sink) WithValues(keysAndValues ...any) logr.LogSink {
	return s.with(keysAndValues, s.keep)
}

func (s *sink) with(keysAndValues []any, keep bool) *sink {
	values := make([]any, 0, len(s.values)+len(keysAndValues))
	values = append(append(values, s.values...), keysAndValues...)
	return &sink{next: s.next, values: values, depth: s.depth, keep: keep}
}

func (s *sink) WithName(name string) logr.LogSink {
	return &sink{next: s.next.WithName(name), values: s.values, depth: s.depth, keep: s.keep}
}

func (s *sink) WithCallDepth(depth int) logr.LogSink {
	return &sink{next: s.next, values: s.values, depth: s.depth + depth, keep: s.keep}
}
