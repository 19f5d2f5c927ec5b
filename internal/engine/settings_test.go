package engine

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"

	"github.com/kopf-go/kopf/internal/daemons"
	"github.com/kopf-go/kopf/internal/peering"
	"github.com/kopf-go/kopf/internal/ring"
	"github.com/kopf-go/kopf/internal/ring/share"
)

// resolved is the settings resolved, for tests.
func resolved(t testing.TB, s Settings) Settings {
	t.Helper()
	s, err := s.Resolved()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// defaultsOf is what Resolved fills in, comparable field by field: the
// engine's, and its components' parts.
type defaultsOf struct {
	Finalizer               string
	DefaultBackoff          time.Duration
	ConsistencyTimeout      time.Duration
	MaxConcurrentReconciles int
	ShutdownGrace           time.Duration
	ReportInterval          time.Duration
	ErrorDelays             []time.Duration
	PeeringName             string
	PeeringLifetime         time.Duration
	// Durations: the ring's lease duration, renew deadline, renew period.
	Durations [3]time.Duration
}

func defaultsIn(s Settings) defaultsOf {
	return defaultsOf{s.Finalizer, s.Daemons.DefaultBackoff, s.ConsistencyTimeout, s.MaxConcurrentReconciles,
		s.Daemons.ShutdownGrace, s.Daemons.ReportInterval, s.ErrorDelays, s.Peering.Name, s.Peering.Lifetime,
		[3]time.Duration{s.Sharding.LeaseDuration, s.Sharding.RenewDeadline, s.Sharding.RenewPeriod}}
}

func TestResolved(t *testing.T) {
	kopf := defaultsOf{
		Finalizer: "kopf.zalando.org/KopfFinalizerMarker", DefaultBackoff: 60 * time.Second,
		ConsistencyTimeout: 5 * time.Second, MaxConcurrentReconciles: 16,
		ShutdownGrace: daemons.DefaultShutdownGrace, ReportInterval: daemons.DefaultReportInterval,
		ErrorDelays: []time.Duration{1 * time.Second, 1 * time.Second, 2 * time.Second, 3 * time.Second,
			5 * time.Second, 8 * time.Second, 13 * time.Second, 21 * time.Second, 34 * time.Second, 55 * time.Second,
			89 * time.Second, 144 * time.Second, 233 * time.Second, 377 * time.Second, 610 * time.Second},
		PeeringName: "default", PeeringLifetime: 60 * time.Second,
	}
	sharded := kopf
	sharded.Durations = [3]time.Duration{15 * time.Second, 10 * time.Second, 5 * time.Second}
	custom := Settings{Finalizer: "x/y", ConsistencyTimeout: -1, MaxConcurrentReconciles: 2,
		Daemons:     daemons.Settings{ShutdownGrace: 3 * time.Second, ReportInterval: 4 * time.Second, DefaultBackoff: time.Second},
		ErrorDelays: []time.Duration{time.Second}, Peering: peering.Settings{Name: "mine", Lifetime: 7 * time.Second},
		Sharding: share.Sharding{Ring: "main", Durations: ring.Durations{LeaseDuration: 30 * time.Second, RenewDeadline: 20 * time.Second, RenewPeriod: 2 * time.Second}}}
	tests := []struct {
		name string
		in   Settings
		want defaultsOf
	}{
		{"zero values are Kopf's defaults", Settings{}, kopf},
		{"a ring's durations are the ring's defaults", Settings{Sharding: share.Sharding{Ring: "main"}}, sharded},
		{"set values stay", custom, defaultsIn(custom)},
		{"empty error delays stay empty: no throttling", Settings{ErrorDelays: []time.Duration{}},
			func() defaultsOf { d := kopf; d.ErrorDelays = []time.Duration{}; return d }()},
	}
	for _, tt := range tests {
		once := resolved(t, tt.in)
		got := defaultsIn(once)
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s: -want +got:\n%s", tt.name, diff)
		}
		twice := resolved(t, once)
		if diff := cmp.Diff(got, defaultsIn(twice)); diff != "" {
			t.Errorf("%s: not idempotent: -once +twice:\n%s", tt.name, diff)
		}
		// The identity is decided once: peering and the ring name the
		// replica by it.
		if once.Peering.Identity == "" || twice.Peering.Identity != once.Peering.Identity {
			t.Errorf("%s: identity %q, then %q; want one, kept", tt.name, once.Peering.Identity, twice.Peering.Identity)
		}
		if once.Daemons.Clock != once.Clock || once.Peering.Clock != once.Clock {
			t.Errorf("%s: the parts do not take the engine's clock", tt.name)
		}
	}
}

// A ring's durations that do not nest are refused when the settings are
// resolved, with the ring named.
func TestResolvedRefusesDurationsThatDoNotNest(t *testing.T) {
	_, err := Settings{Sharding: share.Sharding{Ring: "main", Durations: ring.Durations{RenewDeadline: 20 * time.Second}}}.Resolved()
	if err == nil || !strings.Contains(err.Error(), `shard ring "main"`) {
		t.Errorf("Resolved() = %v, want the durations refused for the ring", err)
	}
}

// The engine takes resolved settings only: unresolved ones are a
// programming error, said at once rather than run on zero durations.
func TestUnresolvedSettingsAreRefused(t *testing.T) {
	if _, err := RunActivities(context.Background(), logr.Discard(), nil, Settings{}); !errors.Is(err, errUnresolved) {
		t.Errorf("RunActivities() with unresolved settings = %v, want %v", err, errUnresolved)
	}
	if _, err := Setup(nil, nil, Settings{}); !errors.Is(err, errUnresolved) {
		t.Errorf("Setup() with unresolved settings = %v, want %v", err, errUnresolved)
	}
}

// TestResolvedSharesNoSlice: changing one engine's delays changes no
// other's, nor the defaults, nor the caller's slice.
func TestResolvedSharesNoSlice(t *testing.T) {
	a, b := resolved(t, Settings{}), resolved(t, Settings{})
	a.ErrorDelays[0] = time.Hour
	if b.ErrorDelays[0] == time.Hour || defaultErrorDelays()[0] == time.Hour {
		t.Error("the default error delays are shared between settings")
	}
	mine := []time.Duration{time.Second}
	c := resolved(t, Settings{ErrorDelays: mine})
	c.ErrorDelays[0] = time.Hour
	if mine[0] != time.Second {
		t.Error("the caller's error delays are shared with the engine")
	}
}
