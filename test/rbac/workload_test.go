package rbac

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/handlers"

	"github.com/kopf-go/kopf/pkg/cause"
)

// features is a registry of KopfExample handlers that make the engine do
// what it does with the API: change handlers with a delete handler (so a
// finalizer), results in status, a timer's result and a daemon's patch
// written from outside a reconcile, and a create handler that posts an
// Event and (with settings) reads a config map through handlers.Client.
func features(settings bool) *handlers.Registry {
	reg := handlers.NewRegistry()
	kind := handlers.ForKind(reg, "kopf.dev", "v1", "KopfExample")
	handlers.OnCreate(kind, "create_fn", func(ctx context.Context, obj *unstructured.Unstructured, _ *cause.Change) (any, error) {
		colour := obj.GetNamespace()
		if settings {
			var cm corev1.ConfigMap
			if err := handlers.Client(ctx).Get(ctx, client.ObjectKey{Namespace: obj.GetNamespace(), Name: "settings"}, &cm); err != nil {
				return nil, err
			}
			colour = cm.Data["colour"]
		}
		handlers.PostInfo(ctx, obj, "Coloured", "The object is "+colour+".")
		return map[string]any{"colour": colour}, nil
	})
	handlers.OnUpdate(kind, "update_fn", func(_ context.Context, obj *unstructured.Unstructured, _ *cause.Change) (any, error) {
		field, _, _ := unstructured.NestedString(obj.Object, "spec", "field")
		return map[string]any{"field": field}, nil
	})
	handlers.OnDelete(kind, "delete_fn", func(context.Context, *unstructured.Unstructured, *cause.Change) (any, error) {
		return nil, nil
	})
	handlers.Timer(kind, "tick_fn", func(context.Context, *unstructured.Unstructured, *cause.Daemon) (any, error) {
		return map[string]any{"ticked": true}, nil
	}, handlers.Interval(time.Second))
	handlers.Daemon(kind, "watch_fn", func(ctx context.Context, _ *unstructured.Unstructured, d *cause.Daemon) (any, error) {
		d.Patch.SetLabel("kopf.dev/watched", "yes")
		return nil, nil // the patch is written as the daemon returns
	})
	return reg
}

// workload creates a config map and objects in each namespace, waits
// until they are handled, changes them, waits for the changes to be
// handled, then deletes them and waits until they are gone: each step
// waits for what the operator writes.
func workload(t *testing.T, names []string, namespaces ...string) {
	t.Helper()
	createAll(t, names, namespaces...)
	awaitCreated(t, names, namespaces...)
	changeAll(t, names, namespaces...)
	deleteAll(t, names, namespaces...)
}

// createAll creates a config map "settings" and the objects in each
// namespace.
func createAll(t *testing.T, names []string, namespaces ...string) {
	t.Helper()
	ctx := context.Background()
	for _, ns := range namespaces {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "settings"}, Data: map[string]string{"colour": ns}}
		if err := admin.Create(ctx, cm); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		for _, name := range names {
			if err := admin.Create(ctx, example(ns, name)); err != nil {
				t.Fatalf("create %s/%s: %v", ns, name, err)
			}
		}
	}
}

// awaitCreated waits until each object's create handler has read the
// config map, its timer has ticked, its daemon has patched it, and an
// Event about it is posted.
func awaitCreated(t *testing.T, names []string, namespaces ...string) {
	t.Helper()
	for _, ns := range namespaces {
		for _, name := range names {
			waitFor(t, ns+"/"+name+" is created, its timer ticks, its daemon patches it, and an Event is posted about it", func() string {
				obj := get(t, ns, name)
				var missing []string
				if colour, _, _ := unstructured.NestedString(obj.Object, "status", "create_fn", "colour"); colour != ns {
					missing = append(missing, "status.create_fn.colour")
				}
				if ticked, _, _ := unstructured.NestedBool(obj.Object, "status", "tick_fn", "ticked"); !ticked {
					missing = append(missing, "status.tick_fn.ticked")
				}
				if obj.GetLabels()["kopf.dev/watched"] != "yes" {
					missing = append(missing, "the daemon's label")
				}
				if !hasEvent(t, obj) {
					missing = append(missing, "an Event")
				}
				return strings.Join(missing, ", ")
			})
		}
	}
}

// changeAll changes each object's spec and waits until the update handler
// has seen the change.
func changeAll(t *testing.T, names []string, namespaces ...string) {
	t.Helper()
	for _, ns := range namespaces {
		for _, name := range names {
			patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"field":"changed"}}`))
			if err := admin.Patch(context.Background(), example(ns, name), patch); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, ns := range namespaces {
		for _, name := range names {
			eventually(t, ns+"/"+name+"'s change is handled", func() bool {
				field, _, _ := unstructured.NestedString(get(t, ns, name).Object, "status", "update_fn", "field")
				return field == "changed"
			})
		}
	}
}

// deleteAll deletes the objects and waits until they are gone: their
// delete handlers ran, and the operator removed its finalizer.
func deleteAll(t *testing.T, names []string, namespaces ...string) {
	t.Helper()
	ctx := context.Background()
	for _, ns := range namespaces {
		for _, name := range names {
			if err := admin.Delete(ctx, example(ns, name)); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, ns := range namespaces {
		for _, name := range names {
			eventually(t, ns+"/"+name+" is gone", func() bool {
				err := admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, example(ns, name))
				return apierrors.IsNotFound(err)
			})
		}
	}
}

// example is a KopfExample (its spec set) in ns.
func example(ns, name string) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"field": "value"}}}
	obj.SetAPIVersion("kopf.dev/v1")
	obj.SetKind("KopfExample")
	obj.SetNamespace(ns)
	obj.SetName(name)
	return obj
}

// get reads a KopfExample.
func get(t *testing.T, ns, name string) *unstructured.Unstructured {
	t.Helper()
	obj := example(ns, name)
	if err := admin.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
		t.Fatalf("get %s/%s: %v", ns, name, err)
	}
	return obj
}

// hasEvent tells whether an Event about the object is there.
func hasEvent(t *testing.T, obj *unstructured.Unstructured) bool {
	t.Helper()
	var events corev1.EventList
	if err := admin.List(context.Background(), &events, client.InNamespace(obj.GetNamespace())); err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		if e.InvolvedObject.UID == obj.GetUID() {
			return true
		}
	}
	return false
}

// peering creates the peering object (a ClusterKopfPeering when ns is
// empty) that the operators of a scenario peer through, and deletes it
// when the test ends.
func peering(t *testing.T, ns string) {
	t.Helper()
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion("kopf.dev/v1")
	obj.SetKind("KopfPeering")
	if ns == "" {
		obj.SetKind("ClusterKopfPeering")
	}
	obj.SetNamespace(ns)
	obj.SetName("default")
	if err := admin.Create(context.Background(), obj); err != nil {
		t.Fatalf("create the peering object: %v", err)
	}
	t.Cleanup(func() { _ = admin.Delete(context.Background(), obj) })
}

// peered waits until the peering object has a record of the operator.
func peered(t *testing.T, ns, identity string) {
	t.Helper()
	eventually(t, "the peering object has "+identity+"'s record", func() bool {
		obj := &unstructured.Unstructured{}
		obj.SetAPIVersion("kopf.dev/v1")
		obj.SetKind("KopfPeering")
		if ns == "" {
			obj.SetKind("ClusterKopfPeering")
		}
		if err := admin.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "default"}, obj); err != nil {
			t.Fatal(err)
		}
		_, found, _ := unstructured.NestedFieldNoCopy(obj.Object, "status", identity)
		return found
	})
}
