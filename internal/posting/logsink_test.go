package posting

import (
	"errors"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"
)

// logSome writes one line of each kind.
func logSome(log logr.Logger) {
	log.Info("hello world")
	log.V(1).Info("debug line")
	log.V(2).Info("more debug")
	log.Error(errors.New("boom"), "Handler 'fn' failed.")
	log.Error(nil, "Bad state.")
}

// posted lists the queued Events as type/reason/message.
func posted(p *Poster) []string {
	var out []string
	for _, ev := range queuedEvents(p) {
		out = append(out, ev.eventType+"/"+ev.reason+"/"+ev.text)
	}
	return out
}

func TestLogSinkPosting(t *testing.T) {
	tests := []struct {
		name     string
		settings Settings
		want     []string
	}{
		{"off by default", Settings{}, nil},
		{"loggers", Settings{Loggers: true}, []string{
			"Normal/Logging/hello world", "Error/Logging/Handler 'fn' failed. boom", "Error/Logging/Bad state."}},
		{"loggers at debug", Settings{Loggers: true, Level: LevelDebug}, []string{
			"Normal/Logging/hello world", "Debug/Logging/debug line", "Debug/Logging/more debug",
			"Error/Logging/Handler 'fn' failed. boom", "Error/Logging/Bad state."}},
		{"loggers at warning", Settings{Loggers: true, Level: LevelWarning}, []string{
			"Error/Logging/Handler 'fn' failed. boom", "Error/Logging/Bad state."}},
		{"loggers above error", Settings{Loggers: true, Level: LevelError + 1}, nil},
		{"loggers disabled", Settings{Loggers: true, Disabled: true, Level: LevelDebug}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var printed lines
			p := &Poster{Settings: tt.settings}
			logSome(Logger(printed.loggerAt(0), p, exampleRef))
			if diff := cmp.Diff(tt.want, posted(p)); diff != "" {
				t.Errorf("posted -want +got:\n%s", diff)
			}
			// The console's verbosity is its own: V(0) and errors only.
			if len(printed.all) != 3 || printed.containing("debug") != 0 {
				t.Errorf("printed %q, want the info and error lines only", printed.all)
			}
		})
	}
}

func TestLogSinkRef(t *testing.T) {
	p := &Poster{Settings: Settings{Loggers: true}}
	log := Logger(logr.Discard(), p, configMapRef)
	log.WithName("sub").WithValues("k", "v").Info("one")
	// A posting logger is re-pointed, not wrapped twice.
	Logger(log, p, exampleRef).Info("two")
	var refs []Ref
	for _, ev := range queuedEvents(p) {
		refs = append(refs, ev.ref)
	}
	if diff := cmp.Diff([]Ref{configMapRef, exampleRef}, refs); diff != "" {
		t.Errorf("events about -want +got:\n%s", diff)
	}
}

// TestLocal: lines marked local are printed, never posted.
func TestLocal(t *testing.T) {
	var printed lines
	p := &Poster{Settings: Settings{Loggers: true}}
	log := Logger(printed.loggerAt(0), p, exampleRef)

	Local(log).Info("local 1")
	Local(log).WithName("n").WithValues("k", "v").Error(nil, "local 2")
	log.Info("local 3", LocalKey, true, "k", "v")
	log.WithValues(LocalKey, true).Info("local 4")
	log.Info("posted 1", LocalKey, false)
	log.Info("posted 2")
	if Local(logr.Discard()).GetSink() != nil {
		t.Errorf("Local() of a logger that does not post changed it")
	}

	if diff := cmp.Diff([]string{"Normal/Logging/posted 1", "Normal/Logging/posted 2"}, posted(p)); diff != "" {
		t.Errorf("posted -want +got:\n%s", diff)
	}
	if len(printed.all) != 6 || printed.containing(LocalKey) != 0 || printed.containing(`"k"="v"`) != 2 {
		t.Errorf("printed %q, want all six lines, without %s", printed.all, LocalKey)
	}
}

// TestLogSinkPassesOn: names, values and the caller reach the wrapped sink.
func TestLogSinkPassesOn(t *testing.T) {
	var printed []string
	next := funcr.New(func(prefix, args string) { printed = append(printed, prefix+" "+args) },
		funcr.Options{LogCaller: funcr.All})
	p := &Poster{Settings: Settings{Loggers: true}}
	log := Logger(next.WithName("engine"), p, exampleRef).WithName("object").WithValues("uid", "uid1")
	log.Info("hello")
	log.Error(errors.New("boom"), "failed")
	if len(printed) != 2 {
		t.Fatalf("printed %q, want 2 lines", printed)
	}
	for _, line := range printed {
		if !strings.HasPrefix(line, "engine/object ") || !strings.Contains(line, `"uid"="uid1"`) ||
			!strings.Contains(line, `"file"="logsink_test.go"`) {
			t.Errorf("printed %q, want the names, the values and this file as the caller", line)
		}
	}
	// Without a sink to pass on to, lines are still posted.
	Logger(logr.Discard(), p, exampleRef).Info("only posted")
	if got := posted(p); len(got) != 3 || got[2] != "Normal/Logging/only posted" {
		t.Errorf("posted %q", got)
	}
}

func TestStripLocal(t *testing.T) {
	tests := []struct {
		in        []any
		want      []any
		wantLocal bool
	}{
		{nil, nil, false},
		{[]any{"a", 1}, []any{"a", 1}, false},
		{[]any{LocalKey, true}, []any{}, true},
		{[]any{"a", 1, LocalKey, true, "b", 2}, []any{"a", 1, "b", 2}, true},
		{[]any{LocalKey, false, "b", 2}, []any{"b", 2}, false},
		{[]any{LocalKey, "yes"}, []any{}, false},
		{[]any{"a", 1, LocalKey}, []any{"a", 1, LocalKey}, false}, // a dangling key is no pair
	}
	for _, tt := range tests {
		got, local := stripLocal(tt.in)
		if diff := cmp.Diff(tt.want, got); diff != "" || local != tt.wantLocal {
			t.Errorf("stripLocal(%v) = %v, %v; want %v, %v", tt.in, got, local, tt.want, tt.wantLocal)
		}
	}
}
