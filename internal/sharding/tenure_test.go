package sharding

import (
	"testing"
	"time"
)

// A member's fence comes at the renew deadline after it sent its last
// successful renewal, before any observer can count it dead.
func TestTenure(t *testing.T) {
	tenure := Tenure{Renewed: t0, RenewDeadline: 10 * time.Second, LeaseDuration: 15 * time.Second}
	tests := []struct {
		name  string
		at    time.Duration // since t0
		holds bool
	}{
		{"at the renewal", 0, true},
		{"just before the deadline", 10*time.Second - time.Nanosecond, true},
		{"at the deadline", 10 * time.Second, false},
		{"after a pause longer than the lease", 40 * time.Second, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tenure.Holds(t0.Add(tt.at)); got != tt.holds {
				t.Errorf("Holds(t0+%s) = %v, want %v", tt.at, got, tt.holds)
			}
		})
	}
	if got, want := tenure.FenceAt(), t0.Add(10*time.Second); !got.Equal(want) {
		t.Errorf("FenceAt() = %v, want %v", got, want)
	}
	if got, want := tenure.WritableUntil(), t0.Add(15*time.Second); !got.Equal(want) {
		t.Errorf("WritableUntil() = %v, want %v", got, want)
	}
	if (Tenure{RenewDeadline: time.Second}).Holds(t0) {
		t.Error("a member that never renewed holds its objects")
	}
}
