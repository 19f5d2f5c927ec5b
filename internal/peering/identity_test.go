package peering

import (
	"os"
	"os/user"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// kopfAlphabet is the alphabet of Kopf's random suffix (it has no "g").
const kopfAlphabet = "abcdefhijklmnopqrstuvwxyz0123456789"

// userAtHost is what Identity uses for user@host on this machine.
func userAtHost(t *testing.T) string {
	t.Helper()
	name := "unknown"
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	host, err := os.Hostname()
	if err != nil {
		host = "localhost"
	}
	return name + "@" + host
}

// unsetPodID removes POD_ID for the test (and restores it afterwards).
func unsetPodID(t *testing.T) {
	t.Helper()
	t.Setenv("POD_ID", "")
	if err := os.Unsetenv("POD_ID"); err != nil {
		t.Fatalf("unset POD_ID: %v", err)
	}
}

func TestIdentityFromPodID(t *testing.T) {
	tests := []struct {
		name   string
		podID  string
		manual bool
		want   string
	}{
		{"automatic", "some-pod-1", false, "some-pod-1"},
		{"manual", "some-pod-1", true, "some-pod-1"},
		// Kopf checks for presence, not emptiness: an empty POD_ID is used.
		{"empty", "", false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("POD_ID", tt.podID)
			if diff := cmp.Diff(tt.want, Identity(tt.manual, now)); diff != "" {
				t.Errorf("Identity() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestIdentityManual(t *testing.T) {
	unsetPodID(t)
	if diff := cmp.Diff(userAtHost(t), Identity(true, now)); diff != "" {
		t.Errorf("Identity(manual) mismatch (-want +got):\n%s", diff)
	}
}

func TestIdentityAutomatic(t *testing.T) {
	unsetPodID(t)
	tests := []struct {
		name  string
		now   time.Time
		stamp string
	}{
		{"Kopf's frozen time", now, "20201231235959"},
		{"another zone is formatted in UTC", time.Date(2021, 1, 1, 1, 2, 3, 999999999, time.FixedZone("EET", 2*3600)), "20201231230203"},
		{"single digits are padded", time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC), "20010203040506"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pattern := "^" + regexp.QuoteMeta(userAtHost(t)+"/"+tt.stamp+"/") + "[" + kopfAlphabet + "]{3}$"
			if got := Identity(false, tt.now); !regexp.MustCompile(pattern).MatchString(got) {
				t.Errorf("Identity(automatic) = %q, want it to match %q", got, pattern)
			}
		})
	}
}

// TestIdentitySuffixAlphabet checks that the random suffix draws from all
// of Kopf's alphabet and nothing else.
func TestIdentitySuffixAlphabet(t *testing.T) {
	unsetPodID(t)
	seen := map[rune]bool{}
	for range 3000 {
		id := Identity(false, now)
		suffix := id[strings.LastIndex(id, "/")+1:]
		if len(suffix) != 3 {
			t.Fatalf("Identity() = %q: the suffix %q is not 3 characters", id, suffix)
		}
		for _, c := range suffix {
			seen[c] = true
		}
	}
	want := map[rune]bool{}
	for _, c := range kopfAlphabet {
		want[c] = true
	}
	if diff := cmp.Diff(want, seen); diff != "" {
		t.Errorf("suffix characters mismatch (-want +got):\n%s", diff)
	}
}
