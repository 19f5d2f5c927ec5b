package managed

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
)

// The Leases' wire names: the writer's, a member's, and the label.
func TestLeaseNames(t *testing.T) {
	if diff := cmp.Diff("kopf-webhooks-auto.kopf.dev", WriterLease("auto.kopf.dev")); diff != "" {
		t.Errorf("WriterLease -want +got:\n%s", diff)
	}
	if diff := cmp.Diff("kopf-webhooks-auto.kopf.dev-m0123", PresenceLease("auto.kopf.dev", "m0123")); diff != "" {
		t.Errorf("PresenceLease -want +got:\n%s", diff)
	}
	if ConfigurationLabel != "webhooks.kopf.dev/configuration" || FieldManager != "kopf-go" {
		t.Errorf("wire names changed: %q, %q", ConfigurationLabel, FieldManager)
	}
	// A configuration name too long for a label value is hashed, so that
	// the label and the Leases' names stay valid.
	long := strings.Repeat("abcdefghij.", 10) + "dev"
	base := LeaseBase(long)
	if base == long || len(validation.IsValidLabelValue(base)) > 0 {
		t.Errorf("LeaseBase(%q) = %q, want a hash that is a label value", long, base)
	}
	if errs := validation.IsDNS1123Subdomain(PresenceLease(long, "m0123456789ab")); len(errs) > 0 {
		t.Errorf("the presence Lease's name is not valid: %v", errs)
	}
	if LeaseBase(long) != base || LeaseBase(long+"x") == base {
		t.Errorf("LeaseBase is not a function of the name")
	}
}

func lease(name, holder string, renewed time.Time, seconds int32) coordinationv1.Lease {
	l := coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(renewed.Add(-time.Hour))}}
	l.Spec.HolderIdentity = ptr.To(holder)
	if !renewed.IsZero() {
		l.Spec.RenewTime = ptr.To(metav1.NewMicroTime(renewed))
	}
	if seconds != 0 {
		l.Spec.LeaseDurationSeconds = ptr.To(seconds)
	}
	return l
}

// When to clean up: only when no other replica's presence is live.
func TestLivePresence(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name   string
		leases []coordinationv1.Lease
		want   []string
	}{
		{"none", nil, nil},
		{"only this replica's", []coordinationv1.Lease{lease("self", "me", now, 15)}, nil},
		{"another, renewed just now", []coordinationv1.Lease{lease("self", "me", now, 15), lease("b", "pod-b", now, 15)}, []string{"pod-b"}},
		{"another, about to expire", []coordinationv1.Lease{lease("b", "pod-b", now.Add(-14*time.Second), 15)}, []string{"pod-b"}},
		{"another, expired", []coordinationv1.Lease{lease("b", "pod-b", now.Add(-15*time.Second), 15)}, nil},
		{"a longer declared duration", []coordinationv1.Lease{lease("b", "pod-b", now.Add(-20*time.Second), 30)}, []string{"pod-b"}},
		{"no declared duration: the default", []coordinationv1.Lease{lease("b", "pod-b", now.Add(-10*time.Second), 0)}, []string{"pod-b"}},
		{"never renewed, created long ago", []coordinationv1.Lease{lease("b", "pod-b", time.Time{}, 15)}, nil},
		{"several, sorted", []coordinationv1.Lease{lease("c", "pod-c", now, 15), lease("b", "pod-b", now, 15),
			lease("d", "pod-d", now.Add(-time.Minute), 15)}, []string{"pod-b", "pod-c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, LivePresence(tt.leases, "self", now)); diff != "" {
				t.Errorf("LivePresence() -want +got:\n%s", diff)
			}
		})
	}
}

// Which presence Leases the writer deletes: those expired for a whole
// duration, not those that may still be renewed after a hiccup.
func TestAbandoned(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	leases := []coordinationv1.Lease{
		lease("live", "a", now, 15),
		lease("just-expired", "b", now.Add(-20*time.Second), 15),
		lease("long-expired", "c", now.Add(-30*time.Second), 15),
		lease("ancient", "d", now.Add(-time.Hour), 15),
	}
	var got []string
	for _, l := range Abandoned(leases, now) {
		got = append(got, l.Name)
	}
	if diff := cmp.Diff([]string{"long-expired", "ancient"}, got); diff != "" {
		t.Errorf("Abandoned() -want +got:\n%s", diff)
	}
}
