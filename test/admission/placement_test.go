package admission

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/kopf-go/kopf/handlers"
	"github.com/kopf-go/kopf/internal/ring"
	"github.com/kopf-go/kopf/internal/sharding"
	"github.com/kopf-go/kopf/pkg/cause"
	"github.com/kopf-go/kopf/pkg/kopftest"
	"github.com/kopf-go/kopf/test/testenv"
)

// A ring member that serves the shard placement webhook places the objects
// it serves as they are created: each comes back from its create request
// with the owner label and the grant of the member the ring's epoch
// hashes it to, and the ring's assigner writes to none of them. An object
// created with generateName has no name to hash at admission: the
// assigner places it, as without the webhook. Every placed object carries
// the operator's finalizer, though the kind has no delete handler: the
// ring keeps a name taken while a replica works on its object.
func TestShardPlacementAtAdmission(t *testing.T) {
	const finalizer = "kopf.zalando.org/KopfFinalizerMarker"
	kopftest.NoLeaks(t)
	ns := namespace(t)
	reg := handlers.NewRegistry()
	res := handlers.ForKind(reg, "kopf.dev", "v1", "KopfExample")
	handlers.OnCreate(res, "create", func(context.Context, *unstructured.Unstructured, *cause.Change) (any, error) { return nil, nil })
	handlers.PlaceShardsAtAdmission(res)
	var log lines
	mgr, clientConfig := testenv.WebhookManager(t, cfg, env.WebhookInstallOptions, manager.Options{
		Logger: funcr.New(func(prefix, args string) {
			log.mu.Lock()
			log.all = append(log.all, prefix+" "+args)
			log.mu.Unlock()
		}, funcr.Options{Verbosity: 1})})
	const ringName = "placed"
	err := handlers.SetupWithManager(mgr, reg, handlers.Options{
		Namespaces: []string{ns}, Standalone: true, Identity: "kopf@test/placer",
		Sharding: handlers.Sharding{Ring: ringName, Namespace: ns,
			LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RenewPeriod: 500 * time.Millisecond},
		Webhooks: handlers.WebhookOptions{Path: "/kopf", Managed: managed, ClientConfig: clientConfig},
	})
	if err != nil {
		t.Fatal(err)
	}
	stop := testenv.RunManager(t, mgr)
	defer stop()

	keys := ring.KeysOf(ns, ringName)
	var member string
	kopftest.Eventually(t, "the ring's epoch names the member", 30*time.Second, func() bool {
		lease := &coordinationv1.Lease{}
		if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: ring.EpochLease(ringName)}, lease); err != nil {
			return false
		}
		if members := ring.Published(lease).Members; len(members) == 1 {
			member = members[0]
			return true
		}
		return false
	})
	kopftest.Eventually(t, "the webhook places a dry run", time.Minute, func() bool {
		probe := kex(ns, "probe", nil, map[string]any{})
		return k8s.Create(context.Background(), probe, client.DryRunAll) == nil && probe.GetLabels()[keys.Owner] == member
	})

	for i := range 10 {
		obj := kex(ns, fmt.Sprint("placed-", i), nil, map[string]any{})
		if err := k8s.Create(context.Background(), obj); err != nil {
			t.Fatal(err)
		}
		if obj.GetLabels()[keys.Owner] != member || obj.GetAnnotations()[keys.Granted] != member {
			t.Errorf("%s was created with %v and %v, want its owner label and grant naming %s", obj.GetName(), obj.GetLabels(), obj.GetAnnotations(), member)
		}
		if got, want := obj.GetLabels()[keys.Bucket], sharding.ObjectKey(ns, obj.GetName()); got != want {
			t.Errorf("%s was created with the bucket label %q, want %q", obj.GetName(), got, want)
		}
		// The kind has a change handler and no delete handler: the ring
		// alone needs the finalizer, to keep the name taken.
		if !slices.Contains(obj.GetFinalizers(), finalizer) {
			t.Errorf("%s was created with the finalizers %q, want %q among them", obj.GetName(), obj.GetFinalizers(), finalizer)
		}
	}
	generated := kex(ns, "", nil, map[string]any{})
	generated.SetGenerateName("generated-")
	if err := k8s.Create(context.Background(), generated); err != nil {
		t.Fatal(err)
	}
	kopftest.Eventually(t, "the object created with generateName placed by the assigner", 30*time.Second, func() bool {
		return len(log.with("Assigned "+ns+"/"+generated.GetName()+" to "+member)) > 0
	})
	kopftest.Eventually(t, "the placed objects handled", 30*time.Second, func() bool {
		for i := range 10 {
			obj := &unstructured.Unstructured{}
			obj.SetAPIVersion("kopf.dev/v1")
			obj.SetKind("KopfExample")
			if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: fmt.Sprint("placed-", i)}, obj); err != nil {
				return false
			}
			if !strings.Contains(obj.GetAnnotations()["kopf.zalando.org/last-handled-configuration"], "spec") {
				return false
			}
		}
		return true
	})
	kopftest.Eventually(t, "the object created with generateName placed with the finalizer too", 30*time.Second, func() bool {
		obj := kex(ns, generated.GetName(), nil, nil)
		return k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), obj) == nil && slices.Contains(obj.GetFinalizers(), finalizer)
	})
	if got := log.with("Assigned " + ns + "/placed-"); len(got) > 0 {
		t.Errorf("the assigner placed objects that the webhook had placed: %q", got)
	}
}
