package share

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/kopf-go/kopf/internal/daemons"
	"github.com/kopf-go/kopf/internal/ownership"
	"github.com/kopf-go/kopf/internal/ring"
)

var shareT0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

// keys are the ring "main"'s keys, its Leases in "ops".
var mainKeys = ring.KeysOf("ops", "main")

// leaseScheme knows Leases and ConfigMaps.
func leaseScheme() *runtime.Scheme {
	scheme := runtime.NewScheme()
	_ = coordinationv1.AddToScheme(scheme)
	_ = corev1.AddToScheme(scheme)
	return scheme
}

// joinedShare is the ring share of a member of "main" that has joined at
// shareT0 by the fake clock, and runs until the test ends.
func joinedShare(t *testing.T, fc *clocktesting.FakeClock) *Ownership {
	t.Helper()
	member, err := ring.NewMember(fake.NewClientBuilder().WithScheme(leaseScheme()).Build(),
		ring.Settings{Ring: "main", Namespace: "ops", Identity: "replica-1", Clock: fc})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = member.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case <-member.Joined():
	case <-time.After(10 * time.Second):
		t.Fatal("the member did not join")
	}
	return &Ownership{name: "main", keys: mainKeys, member: member, clock: fc, log: logr.Discard()}
}

// placed is a ConfigMap with the ring's label and annotations.
func placed(owner, granted, next string) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "ns", ResourceVersion: "42",
		Labels: map[string]string{}, Annotations: map[string]string{}}}
	for key, value := range map[string]string{mainKeys.Owner: owner} {
		if value != "" {
			cm.Labels[key] = value
		}
	}
	for key, value := range map[string]string{mainKeys.Granted: granted, mainKeys.Next: next} {
		if value != "" {
			cm.Annotations[key] = value
		}
	}
	return cm
}

// A member works on an object only while its tenure holds and both the
// owner label and the grant name it; it hands one over when asked, unless
// the object is being deleted; it selects its own objects into its cache.
func TestRingShareClaims(t *testing.T) {
	fc := clocktesting.NewFakeClock(shareT0)
	r := joinedShare(t, fc)
	me := r.member.Name()
	deleting := placed(me, me, "m-b")
	deleting.DeletionTimestamp = &metav1.Time{Time: shareT0}
	tests := []struct {
		name string
		obj  *corev1.ConfigMap
		at   time.Duration
		want ownership.ClaimKind
		next string
	}{
		{"its own object", placed(me, me, ""), 0, ownership.Work, ""},
		{"its own object asked to move", placed(me, me, "m-b"), 0, ownership.HandOver, "m-b"},
		{"its own object asked to stay (the ring changed back)", placed(me, me, me), 0, ownership.Work, ""},
		{"its own object being deleted, asked to move", deleting, 0, ownership.Work, ""},
		{"a label edited by hand to this member", placed(me, "m-b", ""), 0, ownership.StandBy, ""},
		{"a label without a grant", placed(me, "", ""), 0, ownership.StandBy, ""},
		{"its own object, after the renew deadline", placed(me, me, ""), ring.DefaultRenewDeadline, ownership.StandBy, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := r.Claim(tt.obj, shareT0.Add(tt.at))
			if got.Kind != tt.want || got.Next != tt.next {
				t.Errorf("claim() = %+v, want kind %d, next %q", got, tt.want, tt.next)
			}
			if got.Kind == ownership.StandBy && got.Why == "" {
				t.Error("a stand-by without a reason to log")
			}
		})
	}
	sel := r.CacheSelector()
	if !sel.Matches(labels.Set{mainKeys.Owner: me}) || sel.Matches(labels.Set{mainKeys.Owner: "m-b"}) {
		t.Errorf("cacheSelector() = %s selects other members' objects or not its own", sel)
	}
}

// The acknowledgement moves the label and the grant and drops the
// request, guarded by the version the owner let go of; a written one
// counts as released.
func TestRingShareLetsGo(t *testing.T) {
	r := joinedShare(t, clocktesting.NewFakeClock(shareT0))
	me := r.member.Name()
	ack, settle := r.LetGo(placed(me, me, "m-b"), "m-b")
	want := map[string]any{"metadata": map[string]any{
		"resourceVersion": "42",
		"labels":          map[string]any{"ops.shard.kopf.dev/main": "m-b"},
		"annotations":     map[string]any{"ops.shard.kopf.dev/main-granted": "m-b", "ops.shard.kopf.dev/main-next": nil},
	}}
	if diff := cmp.Diff(want, ack); diff != "" {
		t.Errorf("letGo() -want +got:\n%s", diff)
	}
	settle(false)
	settle(true)
	if n := r.released.Load(); n != 1 {
		t.Errorf("released = %d, want 1 (the written one)", n)
	}
}

// blocking is a runnable that runs until it is released after its stop.
type blocking struct{ release chan struct{} }

func (b *blocking) Start(ctx context.Context) error {
	<-ctx.Done()
	<-b.release
	return nil
}

// stoppingMember runs a membership whose engine stops only when released;
// it returns the Lease's key, the membership's result, and a channel that
// hears of each write of the Lease after the join.
func stoppingMember(t *testing.T, sup *daemons.Supervisor) (c client.Client, key client.ObjectKey, cancel func(), engine *blocking, result chan error, writes <-chan struct{}) {
	t.Helper()
	written := make(chan struct{}, 1024)
	c = interceptor.NewClient(fake.NewClientBuilder().WithScheme(leaseScheme()).Build(), interceptor.Funcs{
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			err := c.Update(ctx, obj, opts...)
			written <- struct{}{}
			return err
		},
	})
	member, err := ring.NewMember(c, ring.Settings{Ring: "main", Namespace: "ops", Identity: "replica-1",
		Durations: ring.Durations{RenewPeriod: 10 * time.Millisecond, RenewDeadline: time.Second, LeaseDuration: 2 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	engine = &blocking{release: make(chan struct{})}
	f := newFinishing(engine)
	m := &membership{member: member, idle: sup.Idle, log: logr.Discard(), after: []*finishing{f}}
	ctx, cancel := context.WithCancel(context.Background())
	result = make(chan error, 1)
	go func() { result <- m.Start(ctx) }()
	go func() { _ = f.Start(ctx) }()
	<-member.Joined()
	for len(written) > 0 {
		<-written // the join's
	}
	return c, client.ObjectKey{Namespace: "ops", Name: member.LeaseName()}, cancel, engine, result, written
}

// A graceful stop releases the Lease only after the engine has stopped:
// the ring moves the objects at once when it is released.
func TestMembershipReleasesAfterTheEngine(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	sup := daemons.New(daemons.Settings{})
	c, key, cancel, engine, result, writes := stoppingMember(t, sup)
	cancel()
	// Two writes of the Lease after the stop: renewals while the engine
	// stops (a release would be one too, and is caught below).
	for range 2 {
		select {
		case <-writes:
		case <-time.After(10 * time.Second):
			t.Fatal("the member wrote its Lease no more after the stop, though the engine was still stopping")
		}
	}
	if lease := (&coordinationv1.Lease{}); c.Get(context.Background(), key, lease) != nil || ring.Released(lease) {
		t.Fatal("the Lease was given up while the engine was still stopping")
	}
	close(engine.release)
	if err := <-result; err != nil {
		t.Errorf("Start() = %v, want nil after a graceful stop", err)
	}
	lease := &coordinationv1.Lease{}
	if err := c.Get(context.Background(), key, lease); err != nil || !ring.Released(lease) {
		t.Errorf("the Lease is not released after the engine stopped: %v", err)
	}
}

// A graceful stop that leaves something running (a handler in flight, a
// daemon that ignored its stop) does not release the Lease: the ring must
// wait for it to expire, by when the process has exited.
func TestMembershipLeavesTheLeaseToExpireIfWorkStillRuns(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	sup := daemons.New(daemons.Settings{})
	done := sup.Track("a handler that ignores its cancellation")
	defer done()
	c, key, cancel, engine, result, _ := stoppingMember(t, sup)
	cancel()
	close(engine.release)
	if err := <-result; err != nil {
		t.Errorf("Start() = %v, want nil after a graceful stop", err)
	}
	lease := &coordinationv1.Lease{}
	if err := c.Get(context.Background(), key, lease); err != nil || ring.Released(lease) {
		t.Errorf("the Lease was released (%v) while a handler still ran", err)
	}
}
