package reactor

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kopf-go/kopf/internal/daemons"
)

// defaultsOf is what WithDefaults fills in, comparable field by field.
type defaultsOf struct {
	Finalizer               string
	DefaultBackoff          time.Duration
	ConsistencyTimeout      time.Duration
	MaxConcurrentReconciles int
	ShutdownGrace           time.Duration
	ReportInterval          time.Duration
	ErrorDelays             []time.Duration
}

func defaultsIn(s Settings) defaultsOf {
	return defaultsOf{s.Finalizer, s.DefaultBackoff, s.ConsistencyTimeout, s.MaxConcurrentReconciles,
		s.ShutdownGrace, s.ReportInterval, s.ErrorDelays}
}

func TestWithDefaults(t *testing.T) {
	kopf := defaultsOf{
		Finalizer: "kopf.zalando.org/KopfFinalizerMarker", DefaultBackoff: 60 * time.Second,
		ConsistencyTimeout: 5 * time.Second, MaxConcurrentReconciles: 16,
		ShutdownGrace: daemons.DefaultShutdownGrace, ReportInterval: daemons.DefaultReportInterval,
		ErrorDelays: []time.Duration{1 * time.Second, 1 * time.Second, 2 * time.Second, 3 * time.Second,
			5 * time.Second, 8 * time.Second, 13 * time.Second, 21 * time.Second, 34 * time.Second, 55 * time.Second,
			89 * time.Second, 144 * time.Second, 233 * time.Second, 377 * time.Second, 610 * time.Second},
	}
	custom := Settings{Finalizer: "x/y", DefaultBackoff: time.Second, ConsistencyTimeout: -1, MaxConcurrentReconciles: 2,
		ShutdownGrace: 3 * time.Second, ReportInterval: 4 * time.Second, ErrorDelays: []time.Duration{time.Second}}
	tests := []struct {
		name string
		in   Settings
		want defaultsOf
	}{
		{"zero values are Kopf's defaults", Settings{}, kopf},
		{"set values stay", custom, defaultsIn(custom)},
		{"empty error delays stay empty: no throttling", Settings{ErrorDelays: []time.Duration{}},
			func() defaultsOf { d := kopf; d.ErrorDelays = []time.Duration{}; return d }()},
	}
	for _, tt := range tests {
		got := defaultsIn(tt.in.WithDefaults())
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s: -want +got:\n%s", tt.name, diff)
		}
		if diff := cmp.Diff(got, defaultsIn(tt.in.WithDefaults().WithDefaults())); diff != "" {
			t.Errorf("%s: not idempotent: -once +twice:\n%s", tt.name, diff)
		}
	}
}

// TestWithDefaultsSharesNoSlice: changing one engine's delays changes no
// other's, nor the defaults, nor the caller's slice.
func TestWithDefaultsSharesNoSlice(t *testing.T) {
	a, b := Settings{}.WithDefaults(), Settings{}.WithDefaults()
	a.ErrorDelays[0] = time.Hour
	if b.ErrorDelays[0] == time.Hour || defaultErrorDelays()[0] == time.Hour {
		t.Error("the default error delays are shared between settings")
	}
	mine := []time.Duration{time.Second}
	c := Settings{ErrorDelays: mine}.WithDefaults()
	c.ErrorDelays[0] = time.Hour
	if mine[0] != time.Second {
		t.Error("the caller's error delays are shared with the engine")
	}
}
