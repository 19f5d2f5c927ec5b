package lazylog

import (
	"bytes"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/go-logr/zapr"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Lines carry the deferred values, in order, after the logger's own and
// before the line's; names and further values apply as usual.
func TestValuesAppearOnLines(t *testing.T) {
	var lines []string
	base := funcr.New(func(prefix, args string) { lines = append(lines, prefix+" "+args) }, funcr.Options{Verbosity: 1})
	log := WithValues(base.WithValues("controller", "c"), "namespace", "ns", "name", "n")
	log = WithValues(log, "handler", "h")
	log.WithName("daemons").Info("started", "attempt", 1)
	log.V(1).Info("detail")
	log.V(2).Info("not enabled")
	log.Error(nil, "failed")
	want := []string{
		`daemons "level"=0 "msg"="started" "controller"="c" "namespace"="ns" "name"="n" "handler"="h" "attempt"=1`,
		` "level"=1 "msg"="detail" "controller"="c" "namespace"="ns" "name"="n" "handler"="h"`,
		` "msg"="failed" "error"=null "controller"="c" "namespace"="ns" "name"="n" "handler"="h"`,
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("lines:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}

// The caller of a line is the code that logs, not this package, also
// through a wrapper that adds its own frame.
func TestCallerIsTheLoggingCode(t *testing.T) {
	var out bytes.Buffer
	core := zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewDevelopmentEncoderConfig()), zapcore.AddSync(&out), zapcore.InfoLevel)
	log := WithValues(zapr.NewLogger(zap.New(core, zap.AddCaller())), "k", "v")
	log.Info("here")
	wrapped := log.WithSink(&wrapper{next: log.GetSink().(logr.CallDepthLogSink).WithCallDepth(1)})
	wrapped.Info("there")
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2: %s", len(lines), out.String())
	}
	for _, line := range lines {
		if !strings.Contains(line, "lazylog/lazylog_test.go") {
			t.Errorf("the line's caller is not the test: %s", line)
		}
	}
}

// wrapper is a sink that adds a frame, as posting's does.
type wrapper struct{ next logr.LogSink }

func (w *wrapper) Init(info logr.RuntimeInfo)             { w.next.Init(info) }
func (w *wrapper) Enabled(level int) bool                 { return w.next.Enabled(level) }
func (w *wrapper) Info(level int, msg string, kv ...any)  { w.next.Info(level, msg, kv...) }
func (w *wrapper) Error(err error, msg string, kv ...any) { w.next.Error(err, msg, kv...) }
func (w *wrapper) WithValues(kv ...any) logr.LogSink      { return &wrapper{next: w.next.WithValues(kv...)} }
func (w *wrapper) WithName(name string) logr.LogSink      { return &wrapper{next: w.next.WithName(name)} }

// Keeping a logger costs no encoder state until it writes: neither values
// nor call depths reach the next sink before a line.
func TestBindsOnlyWhenWriting(t *testing.T) {
	counting := &countingSink{}
	log := WithValues(logr.New(counting), "k", "v")
	log = WithValues(log, "k2", "v2")
	log = log.WithCallDepth(1)
	if counting.withValues != 0 || counting.withCallDepth != 0 {
		t.Fatalf("values were bound %d times, depths %d times, before any line", counting.withValues, counting.withCallDepth)
	}
	log.Info("one")
	log.Info("two")
	if counting.withValues != 2 || counting.withCallDepth != 2 {
		t.Errorf("values were bound %d times, depths %d times, for two lines; want 2 and 2", counting.withValues, counting.withCallDepth)
	}
}

// The logger of a call binds at its first line and keeps the binding:
// one binding however many lines it writes, none if it writes none, and
// the loggers made from it keep theirs apart.
func TestForCallBindsOnceAtTheFirstLine(t *testing.T) {
	counting := &countingSink{}
	log := ForCall(logr.New(counting), "k", "v")
	log = log.WithValues("reconcileID", "r").WithCallDepth(1)
	if counting.withValues != 0 || counting.withCallDepth != 0 {
		t.Fatalf("values were bound %d times, depths %d times, before any line", counting.withValues, counting.withCallDepth)
	}
	log.Info("one")
	log.V(1).Info("two")
	log.Error(nil, "three")
	if counting.withValues != 1 || counting.withCallDepth != 1 {
		t.Errorf("values were bound %d times, depths %d times, for three lines; want 1 and 1", counting.withValues, counting.withCallDepth)
	}
	log.WithValues("more", 1).Info("four")
	if counting.withValues != 2 {
		t.Errorf("a logger made from a bound one was bound %d times in all, want once more", counting.withValues)
	}
	var lines []string
	base := funcr.New(func(prefix, args string) { lines = append(lines, args) }, funcr.Options{})
	call := ForCall(base, "name", "n")
	call.Info("a")
	call.WithValues("handler", "h").Info("b")
	call.Info("c")
	want := []string{`"level"=0 "msg"="a" "name"="n"`, `"level"=0 "msg"="b" "name"="n" "handler"="h"`, `"level"=0 "msg"="c" "name"="n"`}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("lines:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}

func TestDiscardStaysDiscard(t *testing.T) {
	if WithValues(logr.Discard(), "k", "v").GetSink() != nil {
		t.Error("a discarding logger got a sink")
	}
}

type countingSink struct{ withValues, withCallDepth int }

func (c *countingSink) WithCallDepth(int) logr.LogSink { c.withCallDepth++; return c }

func (c *countingSink) Init(logr.RuntimeInfo)          {}
func (c *countingSink) Enabled(int) bool               { return true }
func (c *countingSink) Info(int, string, ...any)       {}
func (c *countingSink) Error(error, string, ...any)    {}
func (c *countingSink) WithName(string) logr.LogSink   { return c }
func (c *countingSink) WithValues(...any) logr.LogSink { c.withValues++; return c }
