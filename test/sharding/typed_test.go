package sharding

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/handlers"
	"github.com/kopf-go/kopf/internal/sharding"
	"github.com/kopf-go/kopf/pkg/kopftest"

	"github.com/kopf-go/kopf/pkg/cause"
)

// A typed kind (handlers.For) is sharded as ForKind's unstructured one is,
// beside it in the same ring: each ConfigMap's create handler runs once,
// its daemon on its owner alone, and a replica that joins takes its share
// with nothing run on two replicas at once.
func TestTypedKindsShare(t *testing.T) {
	kopftest.NoLeaks(t)
	r := newRing(t)
	r.register = func(reg *handlers.Registry, _ *handlers.Resource[*unstructured.Unstructured], name string) {
		cms := handlers.For[*corev1.ConfigMap](reg)
		handlers.OnCreate(cms, "create", func(ctx context.Context, cm *corev1.ConfigMap, _ *cause.Change) (any, error) {
			defer r.det.enter(cm.Name, name, "create")()
			time.Sleep(r.handlerTime)
			r.det.create(cm.Name, name, "")
			return nil, nil
		})
		handlers.Daemon(cms, "daemon", func(ctx context.Context, cm *corev1.ConfigMap, d *cause.Daemon) (any, error) {
			defer r.det.enter(cm.Name, name, "daemon")()
			r.det.daemon(cm.Name, name, 1)
			defer r.det.daemon(cm.Name, name, -1)
			<-d.Stopped()
			return nil, nil
		})
	}
	r.start("a")
	r.start("b")
	names := make([]string, 40)
	for i := range names {
		names[i] = fmt.Sprintf("cm-%04d", i)
	}
	r.parallel(names, func(name string) error {
		return env.Client.Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: r.ns, Name: name}})
	})
	settled := func() bool {
		list := &corev1.ConfigMapList{}
		if err := env.Client.List(context.Background(), list, client.InNamespace(r.ns)); err != nil {
			t.Fatal(err)
		}
		live := r.liveMembers()
		keys := r.keys()
		found := 0
		for _, cm := range list.Items {
			want := sharding.Owner(sharding.ObjectKey(cm.Namespace, cm.Name), live)
			hosts := r.det.daemonHosts(cm.Name)
			p := keys.Placement(cm.Labels, cm.Annotations)
			if p.Owner != want || p.Granted != want || cm.Annotations[keys.Next] != "" ||
				len(hosts) != 1 || r.member(hosts[0]) != want || len(r.det.creates(cm.Name)) == 0 {
				return false
			}
			found++
		}
		return found == len(names)
	}
	kopftest.Eventually(t, "every ConfigMap handled by its owner, 2 replicas", time.Minute, settled)
	r.start("c")
	kopftest.Eventually(t, "every ConfigMap handled by its owner, 3 replicas", time.Minute, settled)
	moved := 0
	for _, name := range names {
		if got := r.det.creates(name); len(got) != 1 {
			t.Errorf("%s: create handler ran on %v, want once", name, got)
		}
		if hosts := r.det.daemonHosts(name); len(hosts) == 1 && hosts[0] == "c" {
			moved++
		}
	}
	if moved == 0 {
		t.Error("no ConfigMap moved to the replica that joined")
	}
	if o := r.det.overlapping(); len(o) > 0 {
		t.Errorf("executions overlapped: %v", o)
	}
}
