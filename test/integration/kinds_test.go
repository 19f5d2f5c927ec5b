package integration

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kopf-go/kopf/handlers"
	"github.com/kopf-go/kopf/pkg/kopftest"

	"github.com/kopf-go/kopf/pkg/cause"
	"github.com/kopf-go/kopf/pkg/filter"
)

// One operator serves several kinds at once: a typed built-in kind (whose
// essence is its data, and which has no status subresource), a namespaced
// custom kind, and a cluster-scoped custom kind.
func TestSeveralKindsTypedAndClusterScoped(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	reg, kind := kex()
	cms := handlers.For[*corev1.ConfigMap](reg)
	cluster := handlers.ForKind(reg, "kopf.dev", "v1", "ClusterKopfExample")
	var seen calls
	var cmData atomic.Value
	handlers.OnCreate(cms, "cm_create", func(ctx context.Context, cm *corev1.ConfigMap, c *cause.Change) (any, error) {
		seen.add(c)
		cmData.Store(cm.Data["key"])
		return map[string]any{"seen": cm.Data["key"]}, nil
	}, handlers.Labels{"handled": filter.Present})
	handlers.OnUpdate(cms, "cm_update", func(ctx context.Context, cm *corev1.ConfigMap, c *cause.Change) (any, error) {
		seen.add(c)
		return nil, nil
	}, handlers.Labels{"handled": filter.Present})
	handlers.OnDelete(cluster, "cluster_delete", seen.record)
	handlers.OnCreate(kind, "kex_create", seen.record)
	env.StartOperator(t, ns, reg, handlers.Options{})

	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: ns, Labels: map[string]string{"handled": "yes"}},
		Data:       map[string]string{"key": "value"},
	}
	if err := env.Client.Create(context.Background(), cm); err != nil {
		t.Fatal(err)
	}
	clusterObj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kopf.dev/v1", "kind": "ClusterKopfExample",
		"metadata": map[string]any{"name": ns}, "spec": map[string]any{"field": "value"},
	}}
	create(t, clusterObj)
	create(t, exampleObject(t, ns))

	eventually(t, "all three kinds are handled", func() bool {
		return len(seen.of("cm_create")) == 1 && len(seen.of("kex_create")) == 1
	})
	eventually(t, "the config map's diffbase is stored", func() bool {
		var fresh corev1.ConfigMap
		if err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "cm"}, &fresh); err != nil {
			t.Fatal(err)
		}
		return fresh.Annotations["kopf.zalando.org/last-handled-configuration"] == `{"data":{"key":"value"},"metadata":{"labels":{"handled":"yes"}}}`+"\n"
	})
	if cmData.Load() != "value" {
		t.Errorf("the typed handler saw data %v", cmData.Load())
	}
	// A ConfigMap has no status subresource and no status field: the result
	// has nowhere to go but the API server drops it; handling goes on.
	cmPatch := `{"data":{"key":"changed"}}`
	var fresh corev1.ConfigMap
	if err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "cm"}, &fresh); err != nil {
		t.Fatal(err)
	}
	fresh.Data["key"] = "changed"
	if err := env.Client.Update(context.Background(), &fresh); err != nil {
		t.Fatalf("update the config map with %s: %v", cmPatch, err)
	}
	eventually(t, "the config map's update is handled", func() bool { return len(seen.of("cm_update")) == 1 })
	if d := seen.of("cm_update")[0].Diff; d != `(('change', ('data', 'key'), 'value', 'changed'),)` {
		t.Errorf("config map diff = %s", d)
	}

	eventually(t, "the cluster-scoped object gets the finalizer", func() bool {
		return len(getCluster(t, ns).GetFinalizers()) == 1
	})
	if err := env.Client.Delete(context.Background(), clusterObj); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the cluster-scoped deletion is handled", func() bool { return len(seen.of("cluster_delete")) == 1 })
}

func getCluster(t *testing.T, name string) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion("kopf.dev/v1")
	obj.SetKind("ClusterKopfExample")
	if err := env.Client.Get(context.Background(), types.NamespacedName{Name: name}, obj); err != nil {
		t.Fatal(err)
	}
	return obj
}

// The engine joins a manager beside an ordinary controller, which keeps
// working untouched and whose objects get none of the engine's state.
func TestEmbeddedBesideAnotherController(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	reg, kind := kex()
	var seen calls
	handlers.OnCreate(kind, "create_fn", seen.record)
	var reconciled atomic.Int32
	env.StartOperator(t, ns, reg, handlers.Options{}, kopftest.BeforeStart(func(mgr manager.Manager) error {
		return ctrl.NewControllerManagedBy(mgr).For(&corev1.ConfigMap{}).Named("plain-configmaps").
			Complete(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
				if req.Name == "plain" {
					reconciled.Add(1)
				}
				return reconcile.Result{}, nil
			}))
	}))

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "plain", Namespace: ns}, Data: map[string]string{"a": "b"}}
	if err := env.Client.Create(context.Background(), cm); err != nil {
		t.Fatal(err)
	}
	create(t, exampleObject(t, ns))
	eventually(t, "both controllers work", func() bool { return reconciled.Load() > 0 && len(seen.of("create_fn")) == 1 })
	var fresh corev1.ConfigMap
	if err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "plain"}, &fresh); err != nil {
		t.Fatal(err)
	}
	if len(fresh.Annotations) != 0 || len(fresh.Finalizers) != 0 {
		t.Errorf("the other controller's object got annotations %v, finalizers %v", fresh.Annotations, fresh.Finalizers)
	}
}

// One kind registered both typed and by name would get two controllers,
// both handling every object: setup refuses it, naming both, before
// anything runs.
func TestOneKindTypedAndByNameIsRefused(t *testing.T) {
	checkLeaks(t)
	reg := handlers.NewRegistry()
	handlers.OnCreate(handlers.For[*corev1.ConfigMap](reg), "typed", func(context.Context, *corev1.ConfigMap, *cause.Change) (any, error) {
		return nil, nil
	})
	handlers.OnCreate(handlers.ForKind(reg, "", "v1", "ConfigMap"), "by_name", func(context.Context, *unstructured.Unstructured, *cause.Change) (any, error) {
		return nil, nil
	})
	mgr, err := manager.New(env.Config, manager.Options{Scheme: env.Scheme, Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	err = handlers.SetupWithManager(mgr, reg, handlers.Options{})
	want := `kind ConfigMap is registered twice, as handlers.For[*v1.ConfigMap] and as handlers.ForKind("", "v1", "ConfigMap")`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("SetupWithManager() = %v, want an error saying %q", err, want)
	}
}
