package reactor

import "testing"

func TestVersionReached(t *testing.T) {
	tests := []struct {
		name             string
		cached, expected string
		want             bool
	}{
		{"equal", "100", "100", true},
		{"greater", "101", "100", true},
		{"smaller", "99", "100", false},
		{"longer is greater", "1000", "999", true},
		{"shorter is smaller", "999", "1000", false},
		{"same length, compared digit by digit", "190", "109", true},
		{"same length, smaller digit by digit", "109", "190", false},
		{"beyond 64 bits", "123456789012345678901234567891", "123456789012345678901234567890", true},
		{"beyond 64 bits, smaller", "123456789012345678901234567890", "123456789012345678901234567891", false},
		{"non-decimal equal", "abc", "abc", true},
		{"non-decimal cached", "abc", "100", false},
		{"non-decimal expected", "100", "abc", false},
		{"both non-decimal", "b", "a", false},
		{"a sign is not decimal", "+101", "100", false},
		{"negative is not decimal", "-1", "1", false},
		{"a decimal point is not decimal", "101.5", "100", false},
		{"leading zero cached", "0101", "100", false},
		{"leading zero expected", "101", "0100", false},
		{"leading zeros equal as text", "007", "007", true},
		{"zero is not a valid version", "0", "1", false},
		{"empty cached", "", "1", false},
		{"empty expected", "1", "", false},
		{"non-ASCII digits", "１０１", "100", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := versionReached(tt.cached, tt.expected); got != tt.want {
				t.Errorf("versionReached(%q, %q) = %v, want %v", tt.cached, tt.expected, got, tt.want)
			}
		})
	}
}
