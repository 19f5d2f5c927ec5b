package isotime

import (
	"testing"
	"time"
)

func TestFormat(t *testing.T) {
	tests := []struct {
		in   time.Time
		want string
	}{
		{time.Date(2026, 11, 29, 13, 40, 27, 369462000, time.UTC), "2026-11-29T13:40:27.369462+00:00"},
		{time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC), "2000-01-01T00:00:00.000000+00:00"},
		// Other zones are stored in UTC; nanoseconds are cut to microseconds.
		{time.Date(2000, 1, 1, 9, 8, 7, 654321999, time.FixedZone("W11", -11*3600)), "2000-01-01T20:08:07.654321+00:00"},
	}
	for _, tt := range tests {
		if got := Format(tt.in); got != tt.want {
			t.Errorf("Format(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		in   string
		want time.Time
	}{
		{"2000-01-01T00:00:00.000000", time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"2000-01-01T09:08:07.654321", time.Date(2000, 1, 1, 9, 8, 7, 654321000, time.UTC)},
		{"2000-01-01T09:08:07", time.Date(2000, 1, 1, 9, 8, 7, 0, time.UTC)},
		{"2000-01-01T09:08:07.654321Z", time.Date(2000, 1, 1, 9, 8, 7, 654321000, time.UTC)},
		{"2000-01-01T09:08:07.654321+00:00", time.Date(2000, 1, 1, 9, 8, 7, 654321000, time.UTC)},
		{"2000-01-01T09:08:07.654321-11:00", time.Date(2000, 1, 1, 20, 8, 7, 654321000, time.UTC)},
		{"2000-01-01T09:08:07.654321+11:00", time.Date(1999, 12, 31, 22, 8, 7, 654321000, time.UTC)},
		{"2000-01-01T00:00:00+00:00", time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := Parse(tt.in)
			if err != nil {
				t.Fatalf("Parse() error: %v", err)
			}
			if !got.Equal(tt.want) || got.Location() != time.UTC {
				t.Errorf("Parse() = %v, want %v in UTC", got, tt.want)
			}
		})
	}
	for _, bad := range []string{"", "yesterday", "2000-01-01", "2000-13-01T00:00:00", "12:00:00"} {
		if got, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) = %v, want an error", bad, got)
		}
	}
}
