package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/handlers"
	"github.com/kopf-go/kopf/pkg/kopftest"

	"github.com/kopf-go/kopf/pkg/cause"
)

// diffBaseKey is where the last handled configuration is stored.
const diffBaseKey = "kopf.zalando.org/last-handled-configuration"

// recreated is the example object under a name of its own, with the spec
// field that tells the first object from the second.
func recreated(t *testing.T, ns, field string) *unstructured.Unstructured {
	obj := named(t, ns, "kex-again")
	if err := unstructured.SetNestedField(obj.Object, field, "spec", "field"); err != nil {
		t.Fatal(err)
	}
	return obj
}

// nothingOfTheFirst checks every version of the second object: none ever
// carried the first object's outcome (a result that names another uid,
// a diff-base with what only the first object had: marker).
func nothingOfTheFirst(t *testing.T, all []*unstructured.Unstructured, marker string, ids ...string) {
	t.Helper()
	for _, v := range all {
		for _, id := range ids {
			if uid, found, _ := unstructured.NestedString(v.Object, "status", id, "uid"); found && uid != string(v.GetUID()) {
				t.Errorf("version %s of the second object (uid %s) has status.%s of uid %s", v.GetResourceVersion(), v.GetUID(), id, uid)
			}
		}
		if base := v.GetAnnotations()[diffBaseKey]; strings.Contains(base, marker) {
			t.Errorf("version %s of the second object has the first object's diff-base: %s", v.GetResourceVersion(), base)
		}
	}
}

// resultOf is the uid that status.<id> names, if any.
func resultOf(t *testing.T, ns, id string) string {
	uid, _, _ := unstructured.NestedString(get(t, ns, "kex-again").Object, "status", id, "uid")
	return uid
}

// ringOf starts two replicas of a sharded operator with the registries
// that reg makes, and waits until both are members of the ring.
func ringOf(t *testing.T, ns string, reg func() *handlers.Registry) []*kopftest.Operator {
	var ops []*kopftest.Operator
	for _, name := range []string{"a", "b"} {
		op := env.StartOperator(t, ns, reg(), handlers.Options{
			Identity: "kopf@test/" + name, Standalone: true, ShutdownGrace: 5 * time.Second,
			Sharding: handlers.Sharding{Ring: "again", Namespace: ns,
				LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RenewPeriod: 500 * time.Millisecond},
		})
		ops = append(ops, op)
	}
	eventually(t, "both replicas are members of the ring", func() bool {
		members, err := handlers.ShardMembers(context.Background(), env.Client, ns, "again")
		return err == nil && len(members) == 2
	})
	return ops
}

// skipped counts the operators' lines that say a write found its object
// replaced by another one of its name.
func skipped(ops []*kopftest.Operator, message string) int {
	n := 0
	for _, op := range ops {
		n += len(op.Logs.Messages(message))
	}
	return n
}

// An object deleted and created anew under its name while its create
// handler runs: when the handler returns, its result and the diff-base
// are refused (the object they were decided for is gone), and the second
// object's creation is handled as that of the new object it is. The
// second object's every version, from its creation on, is checked.
func TestRecreatedWhileItsCreateHandlerRuns(t *testing.T) {
	tests := []struct {
		name string
		// finalizer: a delete handler makes the engine put its finalizer
		// on the object, which the test removes by hand so that the first
		// object goes.
		finalizer bool
		sharded   bool
	}{
		{name: "without a finalizer"},
		{name: "with a finalizer", finalizer: true},
		{name: "sharded", sharded: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkLeaks(t)
			ns := env.Namespace(t)
			held := newHeldCall()
			registry := func() *handlers.Registry {
				reg, kind := kex()
				handlers.OnCreate(kind, "create_fn", func(ctx context.Context, obj *unstructured.Unstructured, c *cause.Change) (any, error) {
					held.hold(obj.GetUID())
					return map[string]any{"uid": string(obj.GetUID())}, nil
				})
				if tt.finalizer {
					handlers.OnDelete(kind, "delete_fn", nothing)
				}
				return reg
			}
			var ops []*kopftest.Operator
			if tt.sharded {
				ops = ringOf(t, ns, registry)
			} else {
				ops = []*kopftest.Operator{env.StartOperator(t, ns, registry(), handlers.Options{})}
			}
			t.Cleanup(held.free) // before the operators' stop, which waits for the handler

			first := recreated(t, ns, "first")
			create(t, first)
			if uid := held.waitStarted(t); uid != first.GetUID() {
				t.Fatalf("the held call is for uid %s, want the first object's %s", uid, first.GetUID())
			}
			deleteForGood(t, ns, first.GetName())
			second := recreated(t, ns, "second")
			create(t, second)
			versions := watchObjectVersions(t, second)
			held.free()

			eventually(t, "the second object's creation is handled", func() bool {
				obj := get(t, ns, second.GetName())
				return resultOf(t, ns, "create_fn") == string(second.GetUID()) &&
					strings.Contains(obj.GetAnnotations()[diffBaseKey], `"field":"second"`)
			})
			eventually(t, "the first object's write is refused", func() bool {
				return skipped(ops, "Patching was skipped: the object was deleted, and another one has its name now.") > 0
			})
			if !held.called(second.GetUID()) {
				t.Error("the create handler was not called for the second object")
			}
			nothingOfTheFirst(t, versions.all(t), `"field":"first"`, "create_fn")
		})
	}
}

// The patches of daemons, timers and on-event handlers go to the object
// they were run for, or nowhere: a daemon, a timer and an on-event
// handler of the first object return after it was deleted and another
// was created under its name, and nothing of theirs lands on the second
// object, whose own result does.
func TestRecreatedWhileADaemonWrites(t *testing.T) {
	late := func(held *heldCall) func(ctx context.Context, obj *unstructured.Unstructured, d *cause.Daemon) (any, error) {
		return func(ctx context.Context, obj *unstructured.Unstructured, d *cause.Daemon) (any, error) {
			held.hold(obj.GetUID())
			return map[string]any{"uid": string(obj.GetUID())}, nil
		}
	}
	tests := []struct {
		name     string
		register func(kind *handlers.Resource[*unstructured.Unstructured], held *heldCall)
	}{
		{name: "a daemon", register: func(kind *handlers.Resource[*unstructured.Unstructured], held *heldCall) {
			handlers.Daemon(kind, "late_fn", late(held))
		}},
		{name: "a timer", register: func(kind *handlers.Resource[*unstructured.Unstructured], held *heldCall) {
			handlers.Timer(kind, "late_fn", late(held), handlers.Interval(time.Second))
		}},
		{name: "an on-event handler", register: func(kind *handlers.Resource[*unstructured.Unstructured], held *heldCall) {
			handlers.OnEvent(kind, "late_fn", func(ctx context.Context, obj *unstructured.Unstructured, e *cause.Event) (any, error) {
				if e.Type == cause.EventDeleted {
					return nil, nil
				}
				held.hold(obj.GetUID())
				return map[string]any{"uid": string(obj.GetUID())}, nil
			})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkLeaks(t)
			ns := env.Namespace(t)
			held := newHeldCall()
			reg, kind := kex()
			tt.register(kind, held)
			op := env.StartOperator(t, ns, reg, handlers.Options{})
			t.Cleanup(held.free)

			first := recreated(t, ns, "first")
			create(t, first)
			if uid := held.waitStarted(t); uid != first.GetUID() {
				t.Fatalf("the held call is for uid %s, want the first object's %s", uid, first.GetUID())
			}
			deleteForGood(t, ns, first.GetName())
			second := recreated(t, ns, "second")
			create(t, second)
			versions := watchObjectVersions(t, second)
			held.free()

			eventually(t, "the second object's own result", func() bool {
				return resultOf(t, ns, "late_fn") == string(second.GetUID())
			})
			eventually(t, "the first object's write is skipped", func() bool {
				return len(op.Logs.Messages("Patching was skipped: the object is gone.")) > 0
			})
			nothingOfTheFirst(t, versions.all(t), `"field":"first"`, "late_fn")
			if uid := types.UID(resultOf(t, ns, "late_fn")); uid != second.GetUID() {
				t.Errorf("status.late_fn names uid %s, want the second object's %s", uid, second.GetUID())
			}
		})
	}
}

// A built-in kind with a status subresource, handled as a Go type: a
// Deployment deleted and created anew under its name while its create
// handler runs. Its result goes to /status guarded by the resourceVersion
// (the API server drops the unknown field, but checks the version first),
// the diff-base to the object guarded by the uid; the second Deployment
// gets neither, and its creation is handled.
func TestRecreatedTypedWithStatus(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	held := newHeldCall()
	reg := handlers.NewRegistry()
	handlers.OnCreate(handlers.For[*appsv1.Deployment](reg), "create_fn", func(ctx context.Context, d *appsv1.Deployment, c *cause.Change) (any, error) {
		held.hold(d.GetUID())
		return map[string]any{"uid": string(d.GetUID())}, nil
	})
	op := env.StartOperator(t, ns, reg, handlers.Options{})
	t.Cleanup(held.free)

	deployment := func(which string) *appsv1.Deployment {
		labels := map[string]string{"app": "again"}
		return &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "again", Annotations: map[string]string{"which": which}},
			Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.com/c"}}}}},
		}
	}
	ctx := context.Background()
	first := deployment("first")
	if err := env.Client.Create(ctx, first); err != nil {
		t.Fatal(err)
	}
	if uid := held.waitStarted(t); uid != first.GetUID() {
		t.Fatalf("the held call is for uid %s, want the first Deployment's %s", uid, first.GetUID())
	}
	if err := env.Client.Delete(ctx, first); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the first Deployment is gone", func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(first), &appsv1.Deployment{}))
	})
	second := deployment("second")
	if err := env.Client.Create(ctx, second); err != nil {
		t.Fatal(err)
	}
	created := &unstructured.Unstructured{}
	created.SetGroupVersionKind(appsv1.SchemeGroupVersion.WithKind("Deployment"))
	created.SetNamespace(ns)
	created.SetName(second.Name)
	created.SetUID(second.UID)
	created.SetResourceVersion(second.ResourceVersion)
	versions := watchObjectVersions(t, created)
	held.free()

	eventually(t, "the second Deployment's creation is handled", func() bool {
		now := &appsv1.Deployment{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(second), now); err != nil {
			t.Fatal(err)
		}
		return strings.Contains(now.Annotations[diffBaseKey], `"which":"second"`)
	})
	eventually(t, "the first Deployment's write is refused", func() bool {
		return skipped([]*kopftest.Operator{op}, "Patching was skipped: the object was deleted, and another one has its name now.") > 0
	})
	if !held.called(second.GetUID()) {
		t.Error("the create handler was not called for the second Deployment")
	}
	nothingOfTheFirst(t, versions.all(t), `"which":"first"`)
}
