package integration

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/kopf-go/kopf/handlers"
	"github.com/kopf-go/kopf/pkg/kopftest"

	"github.com/kopf-go/kopf/pkg/cause"
)

const diffbaseAnnotation = "kopf.zalando.org/last-handled-configuration"

// servedCreates registers a create handler and a daemon that record the
// namespaces they run in, and the daemons' stop causes by namespace.
type servedCreates struct {
	mu      sync.Mutex
	created []string
	stopped map[string]error
}

func (s *servedCreates) register(kind *handlers.Resource[*unstructured.Unstructured]) {
	s.registerAs(kind, "")
}

// registerAs registers the handlers with a suffix to their ids, for
// registrations that select one resource together.
func (s *servedCreates) registerAs(kind *handlers.Resource[*unstructured.Unstructured], suffix string) {
	s.stopped = map[string]error{}
	handlers.OnCreate(kind, "create_fn"+suffix, func(_ context.Context, obj *unstructured.Unstructured, _ *cause.Change) (any, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.created = append(s.created, obj.GetNamespace())
		return nil, nil
	})
	handlers.Daemon(kind, "watcher"+suffix, func(ctx context.Context, obj *unstructured.Unstructured, _ *cause.Daemon) (any, error) {
		<-ctx.Done()
		s.mu.Lock()
		defer s.mu.Unlock()
		s.stopped[obj.GetNamespace()] = context.Cause(ctx)
		return nil, nil
	})
}

func (s *servedCreates) createdIn(ns string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Contains(s.created, ns)
}

func (s *servedCreates) stoppedIn(ns string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopped[ns]
}

// namespace creates a namespace of the given name; the test deletes it.
func namespace(t *testing.T, name string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := env.Client.Create(context.Background(), ns); err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), ns) })
}

// removeNamespace deletes a namespace for good. The control plane has no
// namespace controller to empty it, so the test finalizes it itself: its
// objects stay in storage, unreachable, as if deleted.
func removeNamespace(t *testing.T, name string) {
	t.Helper()
	ctx := context.Background()
	ns := &corev1.Namespace{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, ns); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Delete(ctx, ns); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, ns); err != nil {
		t.Fatal(err)
	}
	ns.Spec.Finalizers = nil
	if err := env.Client.SubResource("finalize").Update(ctx, ns); err != nil {
		t.Fatalf("finalize namespace %s: %v", name, err)
	}
}

// wholeClusterCache lets the operator's manager cache the whole cluster;
// the engine's own cache follows the patterns.
func wholeClusterCache(o *manager.Options) { o.Cache = cache.Options{} }

// An operator with a pattern serves the namespaces that match it, those
// created after its start included, and not those its negation excludes;
// a namespace that is gone is dropped, and its objects' daemons stop as
// for deleted objects, while the others go on.
func TestNamespacePatternFollowsNamespaces(t *testing.T) {
	checkLeaks(t)
	prefix := fmt.Sprintf("pat%d", time.Now().UnixNano()%100000)
	early, late, skipped := prefix+"-early", prefix+"-late", prefix+"-skip"
	namespace(t, early)
	reg, kind := kex()
	var served servedCreates
	served.register(kind)
	op := env.StartOperator(t, "", reg, handlers.Options{Namespaces: []string{prefix + "-*,!*-skip"}}, kopftest.WithManagerOptions(wholeClusterCache))

	create(t, exampleObject(t, early))
	eventually(t, "the object in the namespace that existed at the start is handled", func() bool { return served.createdIn(early) })
	namespace(t, late)
	namespace(t, skipped)
	create(t, exampleObject(t, skipped))
	create(t, exampleObject(t, late))
	eventually(t, "the object in the namespace created later is handled", func() bool { return served.createdIn(late) })
	eventually(t, "the new namespace is logged", func() bool {
		return len(op.Logs.Messages("Serving the namespaces that match the patterns.")) >= 2
	})
	if served.createdIn(skipped) {
		t.Errorf("the object in %s, which the negation excludes, was handled", skipped)
	}
	if anns := get(t, skipped, "kopf-example-1").GetAnnotations(); anns[diffbaseAnnotation] != "" {
		t.Errorf("the object in %s has a diffbase: it was served", skipped)
	}

	removeNamespace(t, late)
	eventually(t, "the gone namespace's daemon stops", func() bool { return served.stoppedIn(late) != nil })
	if err := served.stoppedIn(late); !errors.Is(err, cause.StopResourceDeleted) {
		t.Errorf("the daemon in the gone namespace stopped with %v, want RESOURCE_DELETED", err)
	}
	if err := served.stoppedIn(early); err != nil {
		t.Errorf("the daemon in %s, still served, stopped: %v", early, err)
	}
	// The remaining namespace is still served, for changes too.
	obj := exampleObject(t, early)
	obj.SetName("kopf-example-2")
	create(t, obj)
	eventually(t, "a new object in the remaining namespace is handled", func() bool {
		return get(t, early, "kopf-example-2").GetAnnotations()[diffbaseAnnotation] != ""
	})
}

// A pattern that matches no namespace at the start serves nothing, says
// so, and serves the first namespace that matches once it appears.
func TestNamespacePatternWaitsForItsFirstNamespace(t *testing.T) {
	checkLeaks(t)
	prefix := fmt.Sprintf("wait%d", time.Now().UnixNano()%100000)
	reg, kind := kex()
	var served servedCreates
	served.register(kind)
	op := env.StartOperator(t, "", reg, handlers.Options{Namespaces: []string{prefix + "-?"}}, kopftest.WithManagerOptions(wholeClusterCache))
	eventually(t, "the operator says it waits", func() bool {
		return len(op.Logs.Messages("No namespace is served now; waiting for one that matches.")) > 0
	})
	namespace(t, prefix+"-1")
	create(t, exampleObject(t, prefix+"-1"))
	eventually(t, "the object in the first matching namespace is handled", func() bool { return served.createdIn(prefix + "-1") })
}

// Without the permission to list and watch namespaces, an operator serves
// the namespaces named exactly and refuses the patterns with globs,
// saying so; with no exact name at all, it fails to start.
func TestNamespacePatternsWithoutNamespacePermissions(t *testing.T) {
	checkLeaks(t)
	exact := env.Namespace(t)
	user := scopedUser(t, exact).Config()
	reg, kind := kex()
	var served servedCreates
	served.register(kind)
	op := env.StartOperator(t, exact, reg, handlers.Options{Standalone: true, Namespaces: []string{exact, exact + "-*"}}, kopftest.WithConfig(user))
	create(t, exampleObject(t, exact))
	eventually(t, "the object in the namespace named exactly is handled", func() bool { return served.createdIn(exact) })
	if n := len(op.Logs.Messages("Namespace patterns with globs are not served; only the namespaces named exactly are.")); n != 1 {
		t.Errorf("the refusal of the patterns was logged %d times, want 1", n)
	}

	reg2, kind2 := kex()
	served.register(kind2)
	failing := env.StartOperator(t, exact, reg2, handlers.Options{Standalone: true, Namespaces: []string{exact + "-*"}}, kopftest.WithConfig(user))
	err := failing.Exited(t)
	if err == nil || !strings.Contains(err.Error(), "no permission to list and watch namespaces") {
		t.Errorf("the operator with only globs exited with %v, want the lack of permission named", err)
	}
}

// scopedUser is a user of the control plane that may work with the
// example objects and post events in one namespace, and nothing else.
func scopedUser(t *testing.T, ns string) *envtest.AuthenticatedUser {
	t.Helper()
	name := "scoped-" + ns
	user, err := env.Environment().AddUser(envtest.User{Name: name}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"kopf.dev"}, Resources: []string{"kopfexamples", "kopfexamples/status"}, Verbs: []string{"*"}},
		{APIGroups: []string{"", "events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
	}}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name},
		Subjects: []rbacv1.Subject{{Kind: "User", Name: name}}}
	for _, o := range []client.Object{role, binding} {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	return user
}

// Peering with a pattern follows the served namespaces: a namespace that
// appears is peered in, so that a higher-priority peer there freezes the
// operator; once that namespace is gone, it no longer does.
func TestNamespacePatternPeersInEachServedNamespace(t *testing.T) {
	checkLeaks(t)
	prefix := fmt.Sprintf("peer%d", time.Now().UnixNano()%100000)
	first, second := prefix+"-a", prefix+"-b"
	namespace(t, first)
	createPeering(t, first, "default")
	reg, kind := kex()
	var served servedCreates
	served.register(kind)
	op := env.StartOperator(t, "", reg, handlers.Options{Identity: "go-operator", Namespaces: []string{prefix + "-*"}}, kopftest.WithManagerOptions(wholeClusterCache))
	eventually(t, "the operator's record is in the first namespace's peering", func() bool {
		_, ok := peers(t, first, "default")["go-operator"]
		return ok
	})

	namespace(t, second)
	createPeering(t, second, "default")
	eventually(t, "the operator's record is in the new namespace's peering", func() bool {
		_, ok := peers(t, second, "default")["go-operator"]
		return ok
	})
	setPeer(t, second, "default", "python-operator", kopfRecord(100, 60))
	eventually(t, "the operator freezes for the peer in the new namespace", func() bool {
		return len(op.Logs.Messages("Pausing the watch-streams.")) == 1
	})

	removeNamespace(t, second)
	eventually(t, "the operator runs again once that namespace is gone", func() bool {
		return len(op.Logs.Messages("Resuming the watch-streams after the pause; listing everything afresh.")) == 1
	})
	create(t, exampleObject(t, first))
	eventually(t, "objects are handled again", func() bool { return served.createdIn(first) })
}
