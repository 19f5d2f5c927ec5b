package main

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kopf-go/kopf/internal/isotime"
	"github.com/kopf-go/kopf/internal/peering"
	kopfv1 "github.com/kopf-go/kopf/pkg/apis/kopf/v1"
)

// kopfTime is Kopf's format of lastseen: microseconds and +00:00.
var kopfTime = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00$`)

// TestFreezeWritesKopfRecord: the record has exactly the fields of Kopf's
// peer records (plus the message), other records stay, and the engine
// reads it as a live peer that pauses operators of lower priority.
func TestFreezeWritesKopfRecord(t *testing.T) {
	ns := env.Namespace(t)
	other := map[string]any{"priority": int64(0), "lifetime": int64(60), "lastseen": isotime.Format(time.Now())}
	createPeering(t, ns, "default", map[string]any{"operator-1": other})

	before := time.Now().Truncate(time.Microsecond)
	r := kopf(t, "freeze", "--peering", "default", "-n", ns, "--lifetime", "45", "--message", "maintenance", "--id", "admin@laptop")
	after := time.Now()
	want := []string{fmt.Sprintf(`Frozen: the record 'admin@laptop' (priority 100, lifetime 45 s, message "maintenance") is in KopfPeering %s/default.`, ns)}
	if diff := cmp.Diff(want, r.succeeded(t)); diff != "" {
		t.Errorf("stdout -want +got:\n%s", diff)
	}

	status := statusOf(t, ns, "default")
	if diff := cmp.Diff([]string{"admin@laptop", "operator-1"}, keys(status)); diff != "" {
		t.Fatalf("the records -want +got:\n%s", diff)
	}
	if diff := cmp.Diff(other, status["operator-1"]); diff != "" {
		t.Errorf("the other record changed (-want +got):\n%s", diff)
	}
	record, _ := status["admin@laptop"].(map[string]any)
	lastseen, _ := record["lastseen"].(string)
	wantRecord := map[string]any{"priority": int64(100), "lifetime": int64(45), "lastseen": lastseen, "message": "maintenance"}
	if diff := cmp.Diff(wantRecord, record); diff != "" {
		t.Errorf("the record -want +got:\n%s", diff)
	}
	if !kopfTime.MatchString(lastseen) {
		t.Errorf("lastseen %q is not in Kopf's format like 2026-01-02T03:04:05.123456+00:00", lastseen)
	}
	seen, err := isotime.Parse(lastseen)
	if err != nil || seen.Before(before) || seen.After(after) {
		t.Errorf("lastseen %q (%v, %v) is not the time of the command, between %v and %v", lastseen, seen, err, before, after)
	}

	// The engine's view: operator-1 (priority 0) pauses in favour of it.
	var records map[string]*kopfv1.Peer
	raw, _ := json.Marshal(status)
	if err := json.Unmarshal(raw, &records); err != nil {
		t.Fatalf("read the records as the engine does: %v", err)
	}
	v := peering.Judge(records, peering.Self{Identity: "operator-1"}, time.Now())
	if len(v.Higher) != 1 || v.Higher[0].Identity != "admin@laptop" || v.Higher[0].Message != "maintenance" ||
		v.Higher[0].Lifetime != 45*time.Second || len(v.Dead) > 0 {
		t.Errorf("the engine judges %+v, want admin@laptop (with its message, alive for 45 s) as the one higher peer", v)
	}
}

// TestFreezePriority: Kopf's default of 100, --priority, and --dev (666).
func TestFreezePriority(t *testing.T) {
	ns := env.Namespace(t)
	createPeering(t, ns, "default", nil)
	tests := []struct {
		id   string
		args []string
		want int64
	}{
		{"default", nil, 100},
		{"explicit", []string{"--priority", "7"}, 7},
		{"dev", []string{"--dev"}, 666},
		{"dev-wins", []string{"-p", "7", "--dev"}, 666},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			args := append([]string{"freeze", "-P", "default", "-n", ns, "-t", "60", "-i", tt.id}, tt.args...)
			lines := kopf(t, args...).succeeded(t)
			want := fmt.Sprintf("Frozen: the record '%s' (priority %d, lifetime 60 s) is in KopfPeering %s/default.", tt.id, tt.want, ns)
			if diff := cmp.Diff([]string{want}, lines); diff != "" {
				t.Errorf("stdout -want +got:\n%s", diff)
			}
			record, _ := statusOf(t, ns, "default")[tt.id].(map[string]any)
			if record["priority"] != tt.want {
				t.Errorf("the record %v, want priority %d", record, tt.want)
			}
			if _, ok := record["message"]; ok {
				t.Errorf("the record %v has a message, want none without --message", record)
			}
		})
	}
}

// TestFreezeNamespaces: -n writes into the KopfPeering of each namespace,
// and nowhere else.
func TestFreezeNamespaces(t *testing.T) {
	ns1, ns2, ns3 := env.Namespace(t), env.Namespace(t), env.Namespace(t)
	for _, ns := range []string{ns1, ns2, ns3} {
		createPeering(t, ns, "default", nil)
	}
	name := clusterName(t)
	createPeering(t, "", name, nil)

	lines := kopf(t, "freeze", "-P", "default", "-n", ns1, "-n", ns2, "-t", "60", "-i", "me").succeeded(t)
	want := []string{
		fmt.Sprintf("Frozen: the record 'me' (priority 100, lifetime 60 s) is in KopfPeering %s/default.", ns1),
		fmt.Sprintf("Frozen: the record 'me' (priority 100, lifetime 60 s) is in KopfPeering %s/default.", ns2),
	}
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Errorf("stdout -want +got:\n%s", diff)
	}
	for ns, want := range map[string][]string{ns1: {"me"}, ns2: {"me"}, ns3: {}} {
		if diff := cmp.Diff(want, keys(statusOf(t, ns, "default"))); diff != "" {
			t.Errorf("the records in %s -want +got:\n%s", ns, diff)
		}
	}
	if diff := cmp.Diff([]string{}, keys(statusOf(t, "", name))); diff != "" {
		t.Errorf("the records of the ClusterKopfPeering -want +got:\n%s", diff)
	}
}

// TestFreezeClusterwide: -A, and no namespace at all, write into the
// ClusterKopfPeering, not into a KopfPeering of the same name.
func TestFreezeClusterwide(t *testing.T) {
	ns := env.Namespace(t)
	name := clusterName(t)
	createPeering(t, "", name, nil)
	createPeering(t, ns, name, nil)

	lines := kopf(t, "freeze", "-P", name, "-A", "-t", "60", "-i", "with-A").succeeded(t)
	lines = append(lines, kopf(t, "freeze", "-P", name, "-t", "60", "-i", "without-namespace").succeeded(t)...)
	want := []string{
		fmt.Sprintf("Frozen: the record 'with-A' (priority 100, lifetime 60 s) is in ClusterKopfPeering %s.", name),
		fmt.Sprintf("Frozen: the record 'without-namespace' (priority 100, lifetime 60 s) is in ClusterKopfPeering %s.", name),
	}
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Errorf("stdout -want +got:\n%s", diff)
	}
	if diff := cmp.Diff([]string{"with-A", "without-namespace"}, keys(statusOf(t, "", name))); diff != "" {
		t.Errorf("the records of the ClusterKopfPeering -want +got:\n%s", diff)
	}
	if diff := cmp.Diff([]string{}, keys(statusOf(t, ns, name))); diff != "" {
		t.Errorf("the records of the KopfPeering -want +got:\n%s", diff)
	}
}

// TestResume removes the record (a null in the merge patch) and leaves the
// others; so does freeze with a zero lifetime, as in Kopf.
func TestResume(t *testing.T) {
	ns := env.Namespace(t)
	record := map[string]any{"priority": int64(100), "lifetime": int64(60), "lastseen": isotime.Format(time.Now())}
	createPeering(t, ns, "default", map[string]any{"me": record, "zero": record, "operator-1": record})
	name := clusterName(t)
	createPeering(t, "", name, map[string]any{"me": record, "operator-1": record})

	lines := kopf(t, "resume", "-P", "default", "-n", ns, "-i", "me").succeeded(t)
	lines = append(lines, kopf(t, "freeze", "-P", "default", "-n", ns, "-i", "zero", "--lifetime", "0").succeeded(t)...)
	lines = append(lines, kopf(t, "resume", "-P", name, "-A", "-i", "me").succeeded(t)...)
	// Resuming again is no error: the record is gone either way. Verbose,
	// it shows the patch: Kopf's null for the key.
	r := kopf(t, "resume", "-P", name, "-i", "me", "-v")
	if want := fmt.Sprintf("Patching ClusterKopfPeering %s with {\"status\":{\"me\":null}}\n", name); r.code != 0 || r.stderr != want {
		t.Errorf("exit code %d and stderr %q, want 0 and %q", r.code, r.stderr, want)
	}
	lines = append(lines, strings.TrimSuffix(r.stdout, "\n"))
	want := []string{
		fmt.Sprintf("Resumed: the record 'me' is removed from KopfPeering %s/default.", ns),
		fmt.Sprintf("Resumed: the record 'zero' is removed from KopfPeering %s/default.", ns),
		fmt.Sprintf("Resumed: the record 'me' is removed from ClusterKopfPeering %s.", name),
		fmt.Sprintf("Resumed: the record 'me' is removed from ClusterKopfPeering %s.", name),
	}
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Errorf("stdout -want +got:\n%s", diff)
	}
	for _, where := range [][2]string{{ns, "default"}, {"", name}} {
		if diff := cmp.Diff([]string{"operator-1"}, keys(statusOf(t, where[0], where[1]))); diff != "" {
			t.Errorf("the records of %q -want +got:\n%s", where, diff)
		}
	}
}

// TestFreezeThenResume: the round trip with the default identity, which
// is Kopf's for manual commands: $POD_ID, else user@host.
func TestFreezeThenResume(t *testing.T) {
	ns := env.Namespace(t)
	createPeering(t, ns, "default", nil)

	t.Setenv("POD_ID", "kopf-admin-pod")
	kopf(t, "freeze", "-P", "default", "-n", ns, "-t", "60").succeeded(t)
	if diff := cmp.Diff([]string{"kopf-admin-pod"}, keys(statusOf(t, ns, "default"))); diff != "" {
		t.Errorf("the records with $POD_ID -want +got:\n%s", diff)
	}

	if pod, ok := os.LookupEnv("POD_ID"); ok {
		os.Unsetenv("POD_ID")
		t.Cleanup(func() { os.Setenv("POD_ID", pod) })
	}
	kopf(t, "freeze", "-P", "default", "-n", ns, "-t", "60").succeeded(t)
	manual := peering.Identity(true, time.Now())
	if !strings.Contains(manual, "@") || strings.Contains(manual, "/") {
		t.Errorf("the manual identity %q is not user@host", manual)
	}
	if diff := cmp.Diff([]string{"kopf-admin-pod", manual}, keys(statusOf(t, ns, "default"))); diff != "" {
		t.Errorf("the records with user@host -want +got:\n%s", diff)
	}

	kopf(t, "resume", "-P", "default", "-n", ns).succeeded(t)
	if diff := cmp.Diff([]string{"kopf-admin-pod"}, keys(statusOf(t, ns, "default"))); diff != "" {
		t.Errorf("the records after resume -want +got:\n%s", diff)
	}
}

// TestMissingPeering: a peering object that does not exist fails the
// command (exit code 1), saying which and where; the others get the record.
func TestMissingPeering(t *testing.T) {
	ns1, ns2 := env.Namespace(t), env.Namespace(t)
	createPeering(t, ns1, "default", nil)

	r := kopf(t, "freeze", "-P", "default", "-n", ns1, "-n", ns2, "-t", "60", "-i", "me")
	if r.code != 1 {
		t.Errorf("exit code %d, want 1", r.code)
	}
	wantOut := fmt.Sprintf("Frozen: the record 'me' (priority 100, lifetime 60 s) is in KopfPeering %s/default.\n", ns1)
	if diff := cmp.Diff(wantOut, r.stdout); diff != "" {
		t.Errorf("stdout -want +got:\n%s", diff)
	}
	wantErr := fmt.Sprintf("kopf freeze: the KopfPeering 'default' does not exist in the namespace '%s': create it first "+
		"(config/crd/peerings-default.yaml has the ones named 'default'), or name another with --peering\n", ns2)
	if diff := cmp.Diff(wantErr, r.stderr); diff != "" {
		t.Errorf("stderr -want +got:\n%s", diff)
	}
	if diff := cmp.Diff([]string{"me"}, keys(statusOf(t, ns1, "default"))); diff != "" {
		t.Errorf("the records in %s -want +got:\n%s", ns1, diff)
	}

	r = kopf(t, "resume", "-P", "absent-peering", "-A", "-i", "me")
	if r.code != 1 || r.stdout != "" {
		t.Errorf("exit code %d and stdout %q, want 1 and nothing", r.code, r.stdout)
	}
	if want := "kopf resume: the ClusterKopfPeering 'absent-peering' does not exist (cluster-wide)"; !strings.HasPrefix(r.stderr, want) {
		t.Errorf("stderr %q, want it to start with %q", r.stderr, want)
	}
}

// TestPeeringFromEnvironment: --peering may come from KOPF_FREEZE_PEERING
// and KOPF_RESUME_PEERING, as in Kopf; the command line wins.
func TestPeeringFromEnvironment(t *testing.T) {
	ns := env.Namespace(t)
	createPeering(t, ns, "from-env", nil)
	createPeering(t, ns, "from-flag", nil)
	t.Setenv("KOPF_FREEZE_PEERING", "from-env")
	t.Setenv("KOPF_RESUME_PEERING", "from-env")

	kopf(t, "freeze", "-n", ns, "-t", "60", "-i", "me").succeeded(t)
	kopf(t, "freeze", "-P", "from-flag", "-n", ns, "-t", "60", "-i", "me").succeeded(t)
	if diff := cmp.Diff([]string{"me"}, keys(statusOf(t, ns, "from-env"))); diff != "" {
		t.Errorf("the records of from-env after freeze -want +got:\n%s", diff)
	}

	kopf(t, "resume", "-n", ns, "-i", "me").succeeded(t)
	if diff := cmp.Diff([]string{}, keys(statusOf(t, ns, "from-env"))); diff != "" {
		t.Errorf("the records of from-env after resume -want +got:\n%s", diff)
	}
	if diff := cmp.Diff([]string{"me"}, keys(statusOf(t, ns, "from-flag"))); diff != "" {
		t.Errorf("the records of from-flag -want +got:\n%s", diff)
	}
}
