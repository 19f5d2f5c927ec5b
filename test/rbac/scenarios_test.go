package rbac

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/handlers"
	"github.com/kopf-go/kopf/internal/ring"
	"github.com/kopf-go/kopf/pkg/kopftest"
	"github.com/kopf-go/kopf/test/testenv"
)

// The roles that kopf-go ships grant nothing its operators do not use.
// Each scenario runs operators as a ServiceAccount bound to some of those
// roles only, and puts objects through their lifecycle (see workload);
// then the audit log's requests of those ServiceAccounts are compared with
// the roles: every verb granted on a resource is used by an operator bound
// to it (or is in exemptions, with the reason), and no request is refused.
func TestGrantedVerbsAreUsed(t *testing.T) {
	scenarios := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"namespaced deployment", namespacedDeployment},
		{"sharded deployment", shardedDeployment},
		{"whole cluster", wholeCluster},
		{"namespace patterns", namespacePatterns},
		{"kubebuilder plugin markers", pluginMarkers},
	}
	ran := 0
	for _, s := range scenarios {
		t.Run(s.name, func(t *testing.T) {
			ran++
			kopftest.NoLeaks(t) // checked once the scenario's operators have stopped
			s.run(t)
		})
	}
	if t.Failed() {
		t.Fatal("a scenario failed: the audit log is not compared")
	}
	if ran < len(scenarios) {
		// -run chose some of the scenarios: what the others use is missing.
		t.Skipf("%d of %d scenarios ran: the audit log is compared only after all of them", ran, len(scenarios))
	}
	compareWithAudit(t, ledger.held(), readAudit(t))
}

// namespacedDeployment is config/deploy/namespaced.yaml with
// config/rbac's namespaced Role and the metrics roles, peering in its
// namespace, and a scraper bound to the metrics-reader role.
func namespacedDeployment(t *testing.T) {
	ns := namespace(t, namespaceBase(t))
	for _, file := range []string{"config/rbac/namespaced.yaml", "config/rbac/metrics-auth.yaml", "config/rbac/metrics-reader.yaml"} {
		apply(t, file, ns, readManifests(t, file, ns))
	}
	deploy := readManifests(t, "config/deploy/namespaced.yaml", ns)
	apply(t, "config/deploy/namespaced.yaml", ns, deploy)
	serviceAccount(t, ns, "prometheus")
	bindClusterRole(t, "kopf-operator-metrics-reader-"+ns, ns, "prometheus")
	peering(t, ns)

	args, metrics := deploymentArgs(t, deploy)
	args = append(args, "--kubeconfig", kubeconfig(t, ns, "kopf-operator"))
	startRunner(t, features(true), args, handlers.Options{Identity: "namespaced-operator"})
	peered(t, ns, "namespaced-operator")
	workload(t, []string{"kopf-example-1"}, ns)
	bearer := token(t, ns, "prometheus")
	eventually(t, "the metrics are served to the metrics reader", func() bool {
		code, err := scrape(metrics, bearer)
		return err == nil && code == 200
	})
}

// shardedDeployment is config/deploy/sharded.yaml with config/rbac's
// namespaced Role and the metrics role: a replica handles the objects, a
// second one joins (objects are handed over to it), then leaves (its
// objects move back, its released Lease is deleted), and the objects are
// changed and deleted.
func shardedDeployment(t *testing.T) {
	ns := namespace(t, namespaceBase(t))
	for _, file := range []string{"config/rbac/namespaced.yaml", "config/rbac/metrics-auth.yaml"} {
		apply(t, file, ns, readManifests(t, file, ns))
	}
	deploy := readManifests(t, "config/deploy/sharded.yaml", ns)
	apply(t, "config/deploy/sharded.yaml", ns, deploy)
	peering(t, ns)
	kc := kubeconfig(t, ns, "kopf-operator")
	replica := func(identity string) *runner {
		args, _ := deploymentArgs(t, deploy)
		ringArg := slices.IndexFunc(args, func(a string) bool { return strings.HasPrefix(a, "--shard-ring=") })
		if ringArg < 0 {
			t.Fatalf("the Deployment's arguments %q lack --shard-ring", args)
		}
		// Short Leases, so that a stopped replica's released Lease is
		// deleted within the test.
		return startRunner(t, features(true), append(args, "--kubeconfig", kc), handlers.Options{Identity: identity,
			Sharding: handlers.Sharding{Namespace: ns, LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RenewPeriod: 500 * time.Millisecond}})
	}
	const ringName = "main"
	// Enough objects that the joining replica's share is almost never
	// empty (each goes to either replica by a hash of their member names,
	// which are new in every run: 1 in 4096 gives all of them to one).
	var names []string
	for i := range 12 {
		names = append(names, fmt.Sprintf("kopf-example-%d", i))
	}

	replica("replica-a")
	createAll(t, names, ns)
	awaitCreated(t, names, ns)
	second := replica("replica-b")
	eventually(t, "replica-b owns some of the objects", func() bool { return len(ownedBy(t, ns, ringName, names)["replica-b"]) > 0 })
	second.stop()
	eventually(t, "replica-a owns every object again, and replica-b's released Lease is deleted", func() bool {
		return len(ownedBy(t, ns, ringName, names)["replica-a"]) == len(names) && memberLeases(t, ns, ringName) == 1
	})
	changeAll(t, names, ns)
	deleteAll(t, names, ns)
}

// members are the identities of the ring's members, by member name.
func members(t *testing.T, ns, ringName string) map[string]string {
	t.Helper()
	m, err := handlers.ShardMembers(context.Background(), admin, ns, ringName)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// memberLeases counts the Leases of the ring's members, released or not.
func memberLeases(t *testing.T, ns, ringName string) int {
	t.Helper()
	var leases coordinationv1.LeaseList
	if err := admin.List(context.Background(), &leases, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, l := range leases.Items {
		if _, ok := ring.MemberOfLease(ringName, l.Name); ok {
			n++
		}
	}
	return n
}

// ownedBy are the objects of each replica (by identity), by their owner
// labels.
func ownedBy(t *testing.T, ns, ringName string, names []string) map[string][]string {
	t.Helper()
	identities := members(t, ns, ringName)
	out := map[string][]string{}
	for _, name := range names {
		owner := get(t, ns, name).GetLabels()[handlers.ShardOwnerLabel(ns, ringName)]
		if id, ok := identities[owner]; ok {
			out[id] = append(out[id], name)
		}
	}
	return out
}

// wholeCluster is config/rbac/clusterwide.yaml: the runner with -A and a
// ClusterKopfPeering, objects in two namespaces.
func wholeCluster(t *testing.T) {
	base := namespaceBase(t)
	home := namespace(t, base)
	served := []string{namespace(t, base+"-1"), namespace(t, base+"-2")}
	serviceAccount(t, home, "kopf-operator")
	apply(t, "config/rbac/clusterwide.yaml", home, readManifests(t, "config/rbac/clusterwide.yaml", home))
	bindClusterRole(t, "kopf-operator-"+home, home, "kopf-operator")
	peering(t, "")
	startRunner(t, features(true), []string{"-A", "--kubeconfig", kubeconfig(t, home, "kopf-operator")}, handlers.Options{Identity: "cluster-operator"})
	peered(t, "", "cluster-operator")
	workload(t, []string{"kopf-example-1"}, served...)
}

// namespacePatterns is config/rbac's namespaced Role in each namespace
// that a pattern with a glob matches, and namespaces.yaml to find them.
func namespacePatterns(t *testing.T) {
	base := namespaceBase(t)
	home := namespace(t, base)
	serviceAccount(t, home, "kopf-operator")
	served := []string{namespace(t, base+"-1"), namespace(t, base+"-2")}
	for _, ns := range served {
		apply(t, "config/rbac/namespaced.yaml", ns, readManifests(t, "config/rbac/namespaced.yaml", ns))
		bindRole(t, "kopf-operator", ns, home, "kopf-operator")
		peering(t, ns)
	}
	apply(t, "config/rbac/namespaces.yaml", home, readManifests(t, "config/rbac/namespaces.yaml", home))
	bindClusterRole(t, "kopf-operator-namespaces-"+home, home, "kopf-operator")
	startRunner(t, features(true), []string{"-n", base + "-?", "--kubeconfig", kubeconfig(t, home, "kopf-operator")},
		handlers.Options{Identity: "pattern-operator"})
	for _, ns := range served {
		peered(t, ns, "pattern-operator")
	}
	workload(t, []string{"kopf-example-1"}, served...)
}

// pluginMarkers is the ClusterRole that controller-gen makes of the
// kubebuilder plugin's RBAC markers (for KopfExample as the project's
// kind), bound as a kubebuilder project binds its manager's role: an
// operator serves the whole cluster (peering cluster-wide), then one
// serves a namespace (peering there), as a --namespaced project's manager
// does. What the project's handlers read is the project's to grant: these
// handlers read no config map.
func pluginMarkers(t *testing.T) {
	home := namespace(t, namespaceBase(t))
	served := []string{namespace(t, home+"-1"), namespace(t, home+"-2")}
	serviceAccount(t, home, "kopf-operator")
	role := pluginRole(t)
	apply(t, "the kubebuilder plugin's markers", home, []*unstructured.Unstructured{role})
	bindClusterRole(t, role.GetName(), home, "kopf-operator")
	kc := kubeconfig(t, home, "kopf-operator")

	peering(t, "")
	whole := startRunner(t, features(false), []string{"-A", "--kubeconfig", kc}, handlers.Options{Identity: "plugin-operator"})
	peered(t, "", "plugin-operator")
	workload(t, []string{"kopf-example-1"}, served[0])
	whole.stop()

	peering(t, served[1])
	startRunner(t, features(false), []string{"-n", served[1], "--kubeconfig", kc}, handlers.Options{Identity: "plugin-operator"})
	peered(t, served[1], "plugin-operator")
	workload(t, []string{"kopf-example-1"}, served[1])
}

// deploymentArgs are the arguments of the Deployment's first container,
// with its listening addresses moved to free local ports, and the address
// of its metrics.
func deploymentArgs(t *testing.T, objs []*unstructured.Unstructured) ([]string, string) {
	t.Helper()
	i := slices.IndexFunc(objs, func(o *unstructured.Unstructured) bool { return o.GetKind() == "Deployment" })
	if i < 0 {
		t.Fatal("the manifests have no Deployment")
	}
	containers, _, _ := unstructured.NestedSlice(objs[i].Object, "spec", "template", "spec", "containers")
	if len(containers) == 0 {
		t.Fatal("the Deployment has no containers")
	}
	c, _ := containers[0].(map[string]any)
	args, _, _ := unstructured.NestedStringSlice(c, "args")
	var out []string
	var metrics string
	for _, a := range args {
		name, _, _ := strings.Cut(a, "=")
		switch name {
		case "--liveness":
			a = "--liveness=http://" + testenv.FreeAddress(t) + "/healthz"
		case "--health-probe-bind-address":
			a = name + "=" + testenv.FreeAddress(t)
		case "--metrics-bind-address":
			metrics = testenv.FreeAddress(t)
			a = name + "=" + metrics
		}
		out = append(out, a)
	}
	return out, metrics
}
