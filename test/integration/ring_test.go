package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/go-logr/logr/testr"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/internal/ring"
	"github.com/kopf-go/kopf/internal/sharding"
)

// A ring member's Lease, as a real API server stores it: created with the
// ring's label, renewed (a new resourceVersion each time), left alone by
// the stop, and marked released when the member is told that its work has
// stopped.
func TestRingMemberLease(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	m, err := ring.NewMember(env.Client, ring.Settings{
		Ring: "main", Namespace: ns, Identity: "kopf@test/20261201100000/abcde",
		Durations: ring.Durations{LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RenewPeriod: 100 * time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	finished := make(chan error, 1)
	go func() { finished <- m.Start(ctx) }()
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			cancel()
			<-finished
		}
	})

	eventually(t, "the member joins", func() bool { return m.LeaseName() != "" })
	key := client.ObjectKey{Namespace: ns, Name: m.LeaseName()}
	lease := &coordinationv1.Lease{}
	eventually(t, "the Lease is created", func() bool { return env.Client.Get(context.Background(), key, lease) == nil })
	if got := lease.Labels[ring.RingLabel]; got != "main" {
		t.Errorf("ring label = %q, want main", got)
	}
	if got := *lease.Spec.LeaseDurationSeconds; got != 3 {
		t.Errorf("lease duration = %d s, want 3", got)
	}
	first := lease.ResourceVersion
	eventually(t, "the Lease is renewed", func() bool {
		now := &coordinationv1.Lease{}
		return env.Client.Get(context.Background(), key, now) == nil && now.ResourceVersion != first
	})

	cancel()
	stopped = true
	if err := <-finished; err != nil {
		t.Errorf("Start() = %v after a graceful stop, want nil", err)
	}
	if err := env.Client.Get(context.Background(), key, &coordinationv1.Lease{}); err != nil {
		t.Errorf("the Lease went with the stop, before the member's work was known to have stopped: %v", err)
	}
	if err := m.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	released := &coordinationv1.Lease{}
	if err := env.Client.Get(context.Background(), key, released); err != nil || !ring.Released(released) {
		t.Errorf("the Lease is not marked released after the release: %v", err)
	}
}

// Durations of the rings in these tests: short, so that an expiry comes
// within seconds, and nested as ring.Settings requires.
const (
	ringLease    = 2 * time.Second
	ringDeadline = 1500 * time.Millisecond
	ringPeriod   = 300 * time.Millisecond
)

var configMapKind = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}

// startMember runs a member of the ring "main" until stop or the end of
// the test; c writes its Lease (env.Client if nil). stop ends it
// gracefully, releasing its Lease as a replica does once its work has
// stopped, and gives Start's (or the release's) error.
func startMember(t *testing.T, ns, identity string, c client.Client) (m *ring.Member, stop func() error) {
	return startMemberFor(t, ns, identity, c, ringLease)
}

// startMemberFor is startMember with the member's own lease duration.
func startMemberFor(t *testing.T, ns, identity string, c client.Client, lease time.Duration) (m *ring.Member, stop func() error) {
	t.Helper()
	if c == nil {
		c = env.Client
	}
	m, err := ring.NewMember(c, ring.Settings{Ring: "main", Namespace: ns, Identity: identity,
		Durations: ring.Durations{LeaseDuration: lease, RenewDeadline: ringDeadline, RenewPeriod: ringPeriod}, Logger: testr.New(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	finished := make(chan error, 1)
	go func() { finished <- m.Start(ctx) }()
	var once sync.Once
	var result error
	stop = func() error {
		once.Do(func() {
			cancel()
			if result = <-finished; result == nil {
				result = m.Release(context.Background())
			}
		})
		return result
	}
	t.Cleanup(func() { _ = stop() })
	<-m.Joined()
	return m, stop
}

// names are the members' names, sorted as Liveness lists them.
func names(members ...*ring.Member) []string {
	var out []string
	for _, m := range members {
		out = append(out, m.Name())
	}
	slices.Sort(out)
	return out
}

// startAssigner runs an assigner of the ring "main" for the ConfigMaps
// of ns until stop or the end of the test, with its log lines (at debug
// level too) in logs.
func startAssigner(t *testing.T, ns, identity string, lease time.Duration) (logs *lines, stop func()) {
	t.Helper()
	return startAssignerOn(t, ns, identity, lease, clock.RealClock{}, env.Config)
}

// startAssignerOn is startAssigner with the clock that times members'
// liveness and the configuration it talks to the API server with, and
// tweaks of its other settings.
func startAssignerOn(t *testing.T, ns, identity string, lease time.Duration, clk clock.WithTicker, cfg *rest.Config, tweaks ...func(*ring.AssignerSettings)) (logs *lines, stop func()) {
	t.Helper()
	logs = &lines{}
	settings := ring.AssignerSettings{
		Ring: "main", Namespace: ns, Identity: identity,
		Durations: ring.Durations{LeaseDuration: lease, RenewDeadline: ringDeadline, RenewPeriod: ringPeriod},
		Kinds:     []schema.GroupVersionKind{configMapKind}, Namespaces: []string{ns},
		Clock: clk, Logger: funcr.New(logs.add, funcr.Options{Verbosity: 1}),
	}
	for _, tweak := range tweaks {
		tweak(&settings)
	}
	a, err := ring.NewAssigner(cfg, nil, nil, settings)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	finished := make(chan error, 1)
	go func() { finished <- a.Start(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-finished; err != nil {
				t.Errorf("the assigner %s: Start() = %v, want nil", identity, err)
			}
		})
	}
	t.Cleanup(stop)
	return logs, stop
}

// lines collects log lines, safe for concurrent use.
type lines struct {
	mu   sync.Mutex
	text []string
}

func (l *lines) add(prefix, args string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.text = append(l.text, prefix+" "+args)
}

// has reports whether a line holds all the parts.
func (l *lines) has(parts ...string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range l.text {
		if !slices.ContainsFunc(parts, func(p string) bool { return !strings.Contains(line, p) }) {
			return true
		}
	}
	return false
}

func (l *lines) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.text)
}

// createConfigMaps creates n ConfigMaps in ns, labelled as the test's.
func createConfigMaps(t *testing.T, ns, prefix string, n int) {
	t.Helper()
	for i := range n {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("%s-%02d", prefix, i),
			Labels: map[string]string{"test": "assigner"}}}
		if err := env.Client.Create(context.Background(), cm); err != nil {
			t.Fatal(err)
		}
	}
}

// placement is where a ConfigMap stands in the ring "main".
type placement struct {
	key, owner, granted, next, version string
}

// ringKeys are the keys of the ring "main" whose Leases live in ns.
func ringKeys(ns string) ring.Keys { return ring.KeysOf(ns, "main") }

// placements are the test's ConfigMaps in ns by name.
func placements(t *testing.T, ns string) map[string]placement {
	t.Helper()
	list := &corev1.ConfigMapList{}
	if err := env.Client.List(context.Background(), list, client.InNamespace(ns), client.MatchingLabels{"test": "assigner"}); err != nil {
		t.Fatal(err)
	}
	out := map[string]placement{}
	for _, cm := range list.Items {
		p := ringKeys(ns).Placement(cm.Labels, cm.Annotations)
		out[cm.Name] = placement{key: sharding.ObjectKey(cm.Namespace, cm.Name), owner: p.Owner, granted: p.Granted,
			next: cm.Annotations[ringKeys(ns).Next], version: cm.ResourceVersion}
	}
	return out
}

// ownedAsHashed reports whether all n ConfigMaps have the owner that
// hashing gives among live, granted to it too, and no handover request.
func ownedAsHashed(t *testing.T, ns string, n int, live []string) func() bool {
	return func() bool {
		got := placements(t, ns)
		if len(got) != n {
			return false
		}
		for _, p := range got {
			if p.owner != sharding.Owner(p.key, live) || p.granted != p.owner || p.next != "" {
				return false
			}
		}
		return true
	}
}
