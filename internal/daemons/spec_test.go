package daemons

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestRefString(t *testing.T) {
	tests := []struct {
		ref  Ref
		want string
	}{
		{Ref{UID: "u", Namespace: "ns", Name: "name"}, "ns/name"},
		{Ref{UID: "u", Name: "cluster-wide"}, "cluster-wide"},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, tt.ref.String()); diff != "" {
			t.Errorf("String() (-want +got):\n%s", diff)
		}
	}
}

func TestNewFillsInDefaults(t *testing.T) {
	s := New(Settings{}).settings
	got := []time.Duration{s.ShutdownGrace, s.ReportInterval, s.DefaultBackoff}
	want := []time.Duration{20 * time.Second, 5 * time.Second, 60 * time.Second}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("grace, report interval, backoff (-want +got):\n%s", diff)
	}
	if s.Clock == nil {
		t.Errorf("no clock")
	}
}
