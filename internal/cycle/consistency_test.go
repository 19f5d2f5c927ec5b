package cycle

import (
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kopf-go/kopf/internal/memory"
	"github.com/kopf-go/kopf/pkg/memo"
)

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

// A daemon's or timer's write counts for the consistency wait as a
// cycle's own does: the next cycle waits for the cache to show the newer
// of the two.
func TestConsistencyWaitTakesDaemonWrites(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const timeout = 5 * time.Second
	tests := []struct {
		name         string
		cached       string
		expected     string // the cycles' last write
		daemonWrote  string // "" for none
		wantWait     time.Duration
		wantExpected string
	}{
		{"no writes", "10", "", "", 0, ""},
		{"the cache shows the daemon's write", "12", "", "12", 0, ""},
		{"the cache is behind the daemon's write", "11", "", "12", timeout, "12"},
		{"the daemon wrote after the cycle", "11", "11", "12", timeout, "12"},
		{"the cycle wrote after the daemon", "11", "13", "12", 2 * time.Second, "13"},
		{"the cache is behind the cycle's write, no daemon", "11", "13", "", 2 * time.Second, "13"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Reconciler{s: Settings{ConsistencyTimeout: timeout}}
			obj := &unstructured.Unstructured{}
			obj.SetResourceVersion(tt.cached)
			store := memory.NewStore(&memo.Memo{}, nil, nil, nil)
			key := types.NamespacedName{Namespace: "ns", Name: "kex"}
			mem := store.Recall("uid-kex", key)
			mem.ExpectedVersion, mem.ConsistencyDeadline = tt.expected, now.Add(2*time.Second)
			if tt.daemonWrote != "" {
				store.DaemonWrote("uid-kex", tt.daemonWrote)
			}
			o := Object{Obj: obj, Mem: mem, Local: logr.Discard()}
			if got := r.consistencyWait(o, now); got != tt.wantWait {
				t.Errorf("wait = %s, want %s", got, tt.wantWait)
			}
			if mem.ExpectedVersion != tt.wantExpected {
				t.Errorf("expected version = %q, want %q", mem.ExpectedVersion, tt.wantExpected)
			}
			if mem.TakeDaemonWrite() != nil {
				t.Error("the daemon's write was not taken")
			}
		})
	}
}
