package posting

import (
	"github.com/go-logr/logr"
	"github.com/kopf-go/kopf/pkg/events"
)

// LocalKey, as a key with the value true in a log line or in WithValues,
// keeps lines from being posted (Kopf's k8s_skip). The sink removes it
// before passing the line on.
const LocalKey = events.LocalKey

// sink passes every line on to next and posts those that the poster's
// settings let through as Events about ref (Kopf's K8sPoster).
type sink struct {
	next   logr.LogSink // nil: nothing is printed, only posted
	poster *Poster
	ref    Ref
	local  bool
}

var (
	_ logr.LogSink                = (*sink)(nil)
	_ logr.CallDepthLogSink       = (*sink)(nil)
	_ logr.CallStackHelperLogSink = (*sink)(nil)
)

// LogSink wraps next (which may be nil) so that, when poster.Settings
// allow (Loggers on, not Disabled, the line's level at least Level), each
// line is also queued as an Event about ref with reason "Logging": V(0)
// lines as Normal, V(1) and more as Debug, errors as Error. Everything is
// passed on to next as it is, with the caller's frame kept right.
func LogSink(next logr.LogSink, poster *Poster, ref Ref) logr.LogSink {
	if cd, ok := next.(logr.CallDepthLogSink); ok {
		next = cd.WithCallDepth(1)
	}
	return &sink{next: next, poster: poster, ref: ref}
}

// Logger returns log with its lines posted about ref (see LogSink). A
// logger that posts already is re-pointed, not wrapped twice.
func Logger(log logr.Logger, poster *Poster, ref Ref) logr.Logger {
	if s, ok := log.GetSink().(*sink); ok {
		c := *s
		c.poster, c.ref = poster, ref
		return log.WithSink(&c)
	}
	return log.WithSink(LogSink(log.GetSink(), poster, ref))
}

// Local returns log with its lines never posted (Kopf's
// LocalObjectLogger): for the engine's lines that Kopf keeps out of Events.
// It recognises a posting logger as Logger makes it; through other
// wrappers, mark lines with LocalKey instead.
func Local(log logr.Logger) logr.Logger {
	if s, ok := log.GetSink().(*sink); ok && !s.local {
		c := *s
		c.local = true
		return log.WithSink(&c)
	}
	return log
}

// Init passes the runtime info on; LogSink has already added this sink's
// frame to next.
func (s *sink) Init(info logr.RuntimeInfo) {
	if s.next != nil {
		s.next.Init(info)
	}
}

// Enabled is true when next prints the level or the line would be posted:
// posting does not depend on the console's verbosity.
func (s *sink) Enabled(level int) bool {
	return s.printed(level) || s.posts(levelOfV(level))
}

func (s *sink) Info(level int, msg string, keysAndValues ...any) {
	keysAndValues, local := stripLocal(keysAndValues)
	if s.printed(level) {
		s.next.Info(level, msg, keysAndValues...)
	}
	if !local && s.posts(levelOfV(level)) {
		s.poster.Enqueue(s.ref, TypeOf(levelOfV(level)), ReasonLogging, msg)
	}
}

func (s *sink) Error(err error, msg string, keysAndValues ...any) {
	keysAndValues, local := stripLocal(keysAndValues)
	if s.next != nil {
		s.next.Error(err, msg, keysAndValues...)
	}
	if !local && s.posts(LevelError) {
		s.poster.Enqueue(s.ref, TypeError, ReasonLogging, MessageOfError(msg, err))
	}
}

func (s *sink) WithValues(keysAndValues ...any) logr.LogSink {
	keysAndValues, local := stripLocal(keysAndValues)
	c := *s
	c.local = s.local || local
	if s.next != nil && len(keysAndValues) > 0 {
		c.next = s.next.WithValues(keysAndValues...)
	}
	return &c
}

func (s *sink) WithName(name string) logr.LogSink {
	c := *s
	if s.next != nil {
		c.next = s.next.WithName(name)
	}
	return &c
}

func (s *sink) WithCallDepth(depth int) logr.LogSink {
	c := *s
	if cd, ok := s.next.(logr.CallDepthLogSink); ok {
		c.next = cd.WithCallDepth(depth)
	}
	return &c
}

func (s *sink) GetCallStackHelper() func() {
	if h, ok := s.next.(logr.CallStackHelperLogSink); ok {
		return h.GetCallStackHelper()
	}
	return func() {}
}

func (s *sink) printed(level int) bool {
	return s.next != nil && s.next.Enabled(level)
}

func (s *sink) posts(level Level) bool {
	return s.poster != nil && !s.local && s.poster.Settings.Loggers && s.poster.Settings.Allows(level)
}

// levelOfV maps logr's verbosity to a level: V(0) is Info, anything more
// verbose is Debug.
func levelOfV(v int) Level {
	if v > 0 {
		return LevelDebug
	}
	return LevelInfo
}

// stripLocal removes LocalKey pairs and tells whether one was true.
func stripLocal(keysAndValues []any) ([]any, bool) {
	found := -1
	for i := 0; i+1 < len(keysAndValues); i += 2 {
		if k, ok := keysAndValues[i].(string); ok && k == LocalKey {
			found = i
			break
		}
	}
	if found < 0 {
		return keysAndValues, false
	}
	local := false
	out := make([]any, 0, len(keysAndValues))
	for i := 0; i < len(keysAndValues); i += 2 {
		if k, ok := keysAndValues[i].(string); ok && k == LocalKey && i+1 < len(keysAndValues) {
			if v, ok := keysAndValues[i+1].(bool); ok && v {
				local = true
			}
			continue
		}
		out = append(out, keysAndValues[i:min(i+2, len(keysAndValues))]...)
	}
	return out, local
}
