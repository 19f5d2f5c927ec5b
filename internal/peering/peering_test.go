package peering

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/rest"
	clienttesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kopf-go/kopf/internal/await"
	"github.com/kopf-go/kopf/internal/freeze"
)

var (
	clusterGVR    = schema.GroupVersionResource{Group: "kopf.dev", Version: "v1", Resource: "clusterkopfpeerings"}
	namespacedGVR = schema.GroupVersionResource{Group: "kopf.dev", Version: "v1", Resource: "kopfpeerings"}
)

func TestTargetString(t *testing.T) {
	tests := []struct {
		name        string
		target      Target
		wantString  string
		wantBlocker string
	}{
		{"cluster-wide", Target{Name: "default"},
			"'default' cluster-wide", "peering 'default' cluster-wide"},
		{"namespaced", Target{Namespace: "ns", Name: "default"},
			"'default' in 'ns'", "peering 'default' in 'ns'"},
		{"another name", Target{Namespace: "ns1", Name: "name0"},
			"'name0' in 'ns1'", "peering 'name0' in 'ns1'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.wantString, tt.target.String()); diff != "" {
				t.Errorf("String() mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantBlocker, tt.target.blocker()); diff != "" {
				t.Errorf("blocker() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTargets(t *testing.T) {
	tests := []struct {
		name     string
		settings Settings
		want     []Target
	}{
		{
			name:     "cluster-wide uses the ClusterKopfPeering",
			settings: Settings{Name: "default"},
			want:     []Target{{Name: "default"}},
		},
		{
			name:     "an empty namespace list is cluster-wide",
			settings: Settings{Name: "default", Namespaces: []string{}},
			want:     []Target{{Name: "default"}},
		},
		{
			name:     "one namespace uses its KopfPeering",
			settings: Settings{Name: "default", Namespaces: []string{"ns"}},
			want:     []Target{{Namespace: "ns", Name: "default"}},
		},
		{
			name:     "each served namespace, in order",
			settings: Settings{Name: "name0", Namespaces: []string{"ns2", "ns1"}},
			want: []Target{
				{Namespace: "ns2", Name: "name0"},
				{Namespace: "ns1", Name: "name0"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &Peering{s: tt.settings}
			if diff := cmp.Diff(tt.want, p.targets()); diff != "" {
				t.Errorf("targets() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestKeepaliveInterval(t *testing.T) {
	tests := []struct {
		name     string
		lifetime time.Duration
		jitter   int
		want     time.Duration
	}{
		// Kopf's test: lifetime 33 with randint() giving 7, 5, 9.
		{"Kopf's 33-7", 33 * time.Second, 7, 26 * time.Second},
		{"Kopf's 33-5", 33 * time.Second, 5, 28 * time.Second},
		{"Kopf's 33-9", 33 * time.Second, 9, 24 * time.Second},
		{"default lifetime, least jitter", 60 * time.Second, 5, 55 * time.Second},
		{"default lifetime, most jitter", 60 * time.Second, 10, 50 * time.Second},
		{"whole seconds of the lifetime", 60*time.Second + 999*time.Millisecond, 5, 55 * time.Second},
		{"a lifetime shorter than the jitter is one second", 8 * time.Second, 10, time.Second},
		{"lifetime equal to the jitter is one second", 5 * time.Second, 5, time.Second},
		{"one second", time.Second, 5, time.Second},
		// Kopf sleeps max(1, ...): never a busy loop.
		{"under a second", 500 * time.Millisecond, 5, time.Second},
		{"zero", 0, 5, time.Second},
		{"negative", -time.Minute, 5, time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, keepaliveInterval(tt.lifetime, tt.jitter)); diff != "" {
				t.Errorf("keepaliveInterval() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestKeepaliveIntervalRange checks Kopf's 50-55 s for the default lifetime
// over the whole of randint(5, 10), and that no interval exceeds the lifetime.
func TestKeepaliveIntervalRange(t *testing.T) {
	for _, lifetime := range []time.Duration{time.Second, 3 * time.Second, 10 * time.Second, 60 * time.Second, time.Hour} {
		for jitter := 5; jitter <= 10; jitter++ {
			got := keepaliveInterval(lifetime, jitter)
			if got < time.Second || got > lifetime {
				t.Errorf("keepaliveInterval(%v, %d) = %v, want within [1s, %v]", lifetime, jitter, got, lifetime)
			}
			if lifetime == DefaultLifetime && (got < 50*time.Second || got > 55*time.Second) {
				t.Errorf("keepaliveInterval(%v, %d) = %v, want within [50s, 55s]", lifetime, jitter, got)
			}
		}
	}
}

// restConfig is a configuration that is never connected to: New only
// builds clients from it.
var restConfig = &rest.Config{Host: "http://127.0.0.1:1"}

func TestNewDefaults(t *testing.T) {
	t.Setenv("POD_ID", "some-pod-1")
	p, err := New(restConfig, Settings{}, &freeze.Toggle{})
	if err != nil {
		t.Fatalf("New() error: %v", err)
	}
	if diff := cmp.Diff(DefaultName, p.s.Name); diff != "" {
		t.Errorf("Name mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(DefaultLifetime, p.s.Lifetime); diff != "" {
		t.Errorf("Lifetime mismatch (-want +got):\n%s", diff)
	}
	if p.s.Clock == nil {
		t.Error("Clock is nil, want the real clock")
	}
	if diff := cmp.Diff("some-pod-1", p.Identity()); diff != "" {
		t.Errorf("Identity() mismatch (-want +got):\n%s", diff)
	}
	if !p.NeedLeaderElection() {
		t.Error("NeedLeaderElection() = false, want true")
	}
}

func TestNewKeepsSettings(t *testing.T) {
	s := Settings{Name: "name0", Lifetime: 33 * time.Second, Identity: "me", Priority: 666}
	p, err := New(restConfig, s, &freeze.Toggle{})
	if err != nil {
		t.Fatalf("New() error: %v", err)
	}
	if p.s.Name != "name0" || p.s.Lifetime != 33*time.Second || p.Identity() != "me" || p.s.Priority != 666 {
		t.Errorf("New() settings = %+v, want %+v kept", p.s, s)
	}
}

func TestNewFreezesMandatory(t *testing.T) {
	tests := []struct {
		name       string
		settings   Settings
		wantFrozen bool
		wantReason string
	}{
		{"auto does not freeze", Settings{Mode: ModeAuto, Identity: "me"}, false, ""},
		{"standalone does not freeze", Settings{Mode: ModeStandalone, Identity: "me"}, false, ""},
		{"mandatory cluster-wide", Settings{Mode: ModeMandatory, Identity: "me", Name: "name0"}, true,
			"the peering object 'name0' cluster-wide has not been seen yet"},
		{"mandatory in each namespace", Settings{Mode: ModeMandatory, Identity: "me", Namespaces: []string{"ns1", "ns2"}}, true,
			"the peering object 'default' in 'ns1' has not been seen yet; the peering object 'default' in 'ns2' has not been seen yet"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			toggle := &freeze.Toggle{}
			if _, err := New(restConfig, tt.settings, toggle); err != nil {
				t.Fatalf("New() error: %v", err)
			}
			frozen, reason := toggle.Frozen()
			if frozen != tt.wantFrozen {
				t.Errorf("frozen = %v, want %v", frozen, tt.wantFrozen)
			}
			if diff := cmp.Diff(tt.wantReason, reason); diff != "" {
				t.Errorf("reason mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStartStandalone(t *testing.T) {
	toggle := &freeze.Toggle{}
	p, err := New(restConfig, Settings{Mode: ModeStandalone, Identity: "me"}, toggle)
	if err != nil {
		t.Fatalf("New() error: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.Start(ctx); err != nil {
		t.Errorf("Start() = %v, want nil", err)
	}
	if frozen, reason := toggle.Frozen(); frozen {
		t.Errorf("standalone froze the operator: %q", reason)
	}
}

// fakeDiscovery is a fake API server's discovery that serves the peering CRDs
// unless missing is set; calls counts the look-ups.
func fakeDiscovery(missing *atomic.Bool, calls *atomic.Int32) *fakediscovery.FakeDiscovery {
	fake := &clienttesting.Fake{Resources: []*metav1.APIResourceList{{
		GroupVersion: "kopf.dev/v1",
		APIResources: []metav1.APIResource{{Name: "kopfpeerings"}, {Name: "clusterkopfpeerings"}},
	}}}
	fake.AddReactor("get", "resource", func(clienttesting.Action) (bool, runtime.Object, error) {
		calls.Add(1)
		if missing.Load() {
			return true, nil, apierrors.NewNotFound(schema.GroupResource{}, "kopf.dev/v1")
		}
		return false, nil, nil
	})
	return &fakediscovery.FakeDiscovery{Fake: fake}
}

func TestCRDServed(t *testing.T) {
	tests := []struct {
		name    string
		missing bool
		gvr     schema.GroupVersionResource
		want    bool
	}{
		{"cluster-wide served", false, clusterGVR, true},
		{"namespaced served", false, namespacedGVR, true},
		{"another resource of the group", false, schema.GroupVersionResource{Group: "kopf.dev", Version: "v1", Resource: "other"}, false},
		{"another group version", false, schema.GroupVersionResource{Group: "zalando.org", Version: "v1", Resource: "kopfpeerings"}, false},
		{"discovery fails", true, clusterGVR, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var missing atomic.Bool
			var calls atomic.Int32
			missing.Store(tt.missing)
			p := &Peering{disco: fakeDiscovery(&missing, &calls)}
			if got := p.crdServed(tt.gvr); got != tt.want {
				t.Errorf("crdServed(%v) = %v, want %v", tt.gvr, got, tt.want)
			}
		})
	}
}

func TestWaitForCRD(t *testing.T) {
	tests := []struct {
		name       string
		mode       Mode
		missing    bool
		want       bool
		wantFrozen bool
		wantReason string
		wantLogs   []string
	}{
		{name: "served", mode: ModeAuto, want: true},
		{name: "served, mandatory", mode: ModeMandatory, want: true},
		{name: "missing, automatic: standalone", mode: ModeAuto, missing: true,
			wantLogs: []string{"The peering CRDs are not in the cluster; running standalone."}},
		{name: "missing, mandatory: frozen", mode: ModeMandatory, missing: true, wantFrozen: true,
			wantReason: "the peering CRD clusterkopfpeerings.kopf.dev is missing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var missing atomic.Bool
			var calls atomic.Int32
			missing.Store(tt.missing)
			toggle := &freeze.Toggle{}
			if tt.mode == ModeMandatory { // only mandatory peering ever sets it
				toggle.Set("peering CRD", true, "before")
			}
			sink := &logs{}
			p := &Peering{
				s:      Settings{Mode: tt.mode, Clock: clocktesting.NewFakeClock(now), Logger: logr.New(sink)},
				disco:  fakeDiscovery(&missing, &calls),
				toggle: toggle,
			}
			ctx, cancel := context.WithCancel(context.Background())
			cancel() // nothing waits: the clock never moves
			if got := p.waitForCRD(ctx, clusterGVR); got != tt.want {
				t.Errorf("waitForCRD() = %v, want %v", got, tt.want)
			}
			frozen, reason := toggle.Frozen()
			if frozen != tt.wantFrozen {
				t.Errorf("frozen = %v, want %v", frozen, tt.wantFrozen)
			}
			if diff := cmp.Diff(tt.wantReason, reason); diff != "" {
				t.Errorf("reason mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantLogs, sink.msgs, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("logs mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestWaitForCRDPolls checks that mandatory peering looks for the CRD again
// every crdPollInterval and unfreezes when it comes.
func TestWaitForCRDPolls(t *testing.T) {
	var missing atomic.Bool
	var calls atomic.Int32
	missing.Store(true)
	clk := clocktesting.NewFakeClock(now)
	toggle := &freeze.Toggle{}
	p := &Peering{
		s:      Settings{Mode: ModeMandatory, Clock: clk, Logger: logr.Discard()},
		disco:  fakeDiscovery(&missing, &calls),
		toggle: toggle,
	}
	done := make(chan bool, 1)
	go func() { done <- p.waitForCRD(context.Background(), clusterGVR) }()

	// waitUntil waits for the goroutine to reach the condition; it does not
	// measure time, only guards against a hang.
	waitUntil := func(what string, cond func() bool) {
		t.Helper()
		await.True(t, what, 10*time.Second, cond)
	}
	waitUntil("the first poll", func() bool { return clk.HasWaiters() })
	if frozen, reason := toggle.Frozen(); !frozen || reason != "the peering CRD clusterkopfpeerings.kopf.dev is missing" {
		t.Errorf("Frozen() = %v, %q; want frozen for the missing CRD", frozen, reason)
	}
	clk.Step(crdPollInterval)
	waitUntil("the second poll", func() bool { return calls.Load() == 2 && clk.HasWaiters() })
	missing.Store(false)
	clk.Step(crdPollInterval)
	if got := <-done; !got {
		t.Errorf("waitForCRD() = false, want true once the CRD is served")
	}
	if frozen, reason := toggle.Frozen(); frozen {
		t.Errorf("still frozen once the CRD is served: %q", reason)
	}
	if got := calls.Load(); got != 3 {
		t.Errorf("discovery calls = %d, want 3", got)
	}
}
