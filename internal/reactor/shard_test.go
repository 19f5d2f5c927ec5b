package reactor

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kopf-go/kopf/internal/daemons"
	"github.com/kopf-go/kopf/internal/registry"
	"github.com/kopf-go/kopf/internal/ring"
)

func shardObject(owner string, next string) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "ns", ResourceVersion: "42",
		Labels: map[string]string{"shard.kopf.dev/main": owner}}}
	if next != "" {
		cm.Annotations = map[string]string{"shard.kopf.dev/main-next": next}
	}
	return cm
}

// Only a requested handover to another member is one; the request stands
// beside the owner label, which only the owner moves.
func TestHandoverTo(t *testing.T) {
	s := newShard("main", "m-a")
	tests := []struct {
		name string
		obj  *corev1.ConfigMap
		want string
	}{
		{"no request", shardObject("m-a", ""), ""},
		{"a request to another member", shardObject("m-a", "m-b"), "m-b"},
		{"a request to this member itself (the ring changed back)", shardObject("m-a", "m-a"), ""},
		{"an object this member does not own", shardObject("m-c", "m-b"), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := s.handoverTo(tt.obj); got != tt.want {
				t.Errorf("handoverTo() = %q, want %q", got, tt.want)
			}
		})
	}
	var unsharded *shard
	if got := unsharded.handoverTo(shardObject("m-a", "m-b")); got != "" {
		t.Errorf("handoverTo() without sharding = %q, want none", got)
	}
}

// The acknowledgement moves the label and drops the request, guarded by
// the version the owner let go of.
func TestAcknowledgement(t *testing.T) {
	s := newShard("main", "m-a")
	want := map[string]any{"metadata": map[string]any{
		"resourceVersion": "42",
		"labels":          map[string]any{"shard.kopf.dev/main": "m-b"},
		"annotations":     map[string]any{"shard.kopf.dev/main-next": nil},
	}}
	if diff := cmp.Diff(want, s.acknowledgement(shardObject("m-a", "m-b"), "m-b")); diff != "" {
		t.Errorf("acknowledgement() -want +got:\n%s", diff)
	}
	sel := s.selector()
	if !sel.Matches(labels.Set{"shard.kopf.dev/main": "m-a"}) || sel.Matches(labels.Set{"shard.kopf.dev/main": "m-b"}) {
		t.Errorf("selector() = %s selects other members' objects or not its own", sel)
	}
}

// blocking is a runnable that runs until it is released after its stop.
type blocking struct{ release chan struct{} }

func (b *blocking) Start(ctx context.Context) error {
	<-ctx.Done()
	<-b.release
	return nil
}

// A graceful stop gives the Lease up only after the engine has stopped:
// the ring moves the objects at once when the Lease goes.
func TestMembershipLeavesAfterTheEngine(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	scheme := runtime.NewScheme()
	_ = coordinationv1.AddToScheme(scheme)
	c := fake.NewClientBuilder().WithScheme(scheme).Build()
	member, err := ring.NewMember(c, ring.Settings{Ring: "main", Namespace: "ops", Identity: "replica-1",
		RenewPeriod: 10 * time.Millisecond, RenewDeadline: time.Second, LeaseDuration: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	engine := newFinishing(&blocking{release: make(chan struct{})})
	m := &membership{member: member, after: []*finishing{engine}}
	ctx, cancel := context.WithCancel(context.Background())
	finished := make(chan error, 1)
	go func() { finished <- m.Start(ctx) }()
	go func() { _ = engine.Start(ctx) }()

	key := client.ObjectKey{Namespace: "ops", Name: member.LeaseName()}
	leaseExists := func() bool { return c.Get(context.Background(), key, &coordinationv1.Lease{}) == nil }
	for deadline := time.Now().Add(5 * time.Second); !leaseExists(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the member's Lease was not created")
		}
	}
	cancel()
	time.Sleep(50 * time.Millisecond) // several renew periods: time enough to leave too early
	if !leaseExists() {
		t.Fatal("the Lease was given up while the engine was still stopping")
	}
	close(engine.Runnable.(*blocking).release)
	if err := <-finished; err != nil {
		t.Errorf("Start() = %v, want nil after a graceful stop", err)
	}
	if err := c.Get(context.Background(), key, &coordinationv1.Lease{}); !apierrors.IsNotFound(err) {
		t.Errorf("the Lease is still there after the engine stopped: %v", err)
	}
}

// handingOver is a reconciler of ConfigMaps in the ring "main" as member
// m-a, writing to c.
func handingOver(t *testing.T, c client.Client, watching bool) *reconciler {
	kind := &registry.Kind{}
	if watching {
		kind.Watching = []*registry.EventHandler{{}}
	}
	w := &writer{gvk: corev1.SchemeGroupVersion.WithKind("ConfigMap"), clients: &clients{direct: c},
		status: fixedProbe(false), timeout: writeTimeout}
	sup := daemons.New(daemons.Settings{})
	t.Cleanup(func() {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_ = sup.Start(ctx)
	})
	return &reconciler{kindObjects: kindObjects{kind: kind, gvk: w.gvk}, writer: w, sup: sup, shard: newShard("main", "m-a")}
}

// The owner that lets go moves the label to the next member and drops
// the request, and remembers, for its on-event handlers, that the
// object's coming DELETED event is no deletion.
func TestHandOverMovesTheLabel(t *testing.T) {
	fc := fake.NewClientBuilder().WithObjects(shardObject("m-a", "m-b")).Build()
	r := handingOver(t, fc, true)
	obj := &corev1.ConfigMap{}
	if err := fc.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "x"}, obj); err != nil {
		t.Fatal(err)
	}
	obj.SetUID("uid-x")
	result, err := r.handOver(context.Background(), &cycle{local: logr.Discard(), obj: obj, mem: &memory{}}, "m-b")
	if err != nil || result != (reconcile.Result{}) {
		t.Fatalf("handOver() = %v, %v; want done", result, err)
	}
	got := &corev1.ConfigMap{}
	if err := fc.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "x"}, got); err != nil {
		t.Fatal(err)
	}
	if owner, next := got.Labels["shard.kopf.dev/main"], got.Annotations["shard.kopf.dev/main-next"]; owner != "m-b" || next != "" {
		t.Errorf("after the handover: owner %q, request %q; want m-b and none", owner, next)
	}
	if n := r.shard.released.Load(); n != 1 {
		t.Errorf("released count = %d, want 1", n)
	}
	if !r.shard.wasHandedOver("uid-x") || r.shard.wasHandedOver("uid-x") {
		t.Errorf("the handed-over object is not remembered exactly once for its DELETED event")
	}
}

// An owner that let go of an object in an old version writes nothing: the
// object changed since, and the next cycle looks at it again.
func TestHandOverOfAStaleObjectIsRetried(t *testing.T) {
	fc := fake.NewClientBuilder().WithObjects(shardObject("m-a", "m-b")).Build()
	r := handingOver(t, fc, true)
	stale := &corev1.ConfigMap{}
	if err := fc.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "x"}, stale); err != nil {
		t.Fatal(err)
	}
	changed := stale.DeepCopy()
	changed.Data = map[string]string{"changed": "meanwhile"}
	if err := fc.Update(context.Background(), changed); err != nil {
		t.Fatal(err)
	}
	stale.SetUID("uid-x")
	result, err := r.handOver(context.Background(), &cycle{local: logr.Discard(), obj: stale, mem: &memory{}}, "m-b")
	if err != nil || !result.Requeue {
		t.Fatalf("handOver() of a stale object = %v, %v; want a retry", result, err)
	}
	got := &corev1.ConfigMap{}
	if err := fc.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "x"}, got); err != nil {
		t.Fatal(err)
	}
	if owner := got.Labels["shard.kopf.dev/main"]; owner != "m-a" {
		t.Errorf("the stale handover moved the label to %q", owner)
	}
	if n := r.shard.released.Load(); n != 0 {
		t.Errorf("released count = %d after a conflict, want 0", n)
	}
	if r.shard.wasHandedOver(stale.GetUID()) {
		t.Errorf("an object whose handover failed is taken as handed over")
	}
}
