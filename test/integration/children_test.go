package integration

import (
	"context"
	"errors"
	"sync"
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
	"github.com/kopf-go/kopf/pkg/hierarchies"
)

// childCalls records the child handlers' calls.
type childCalls struct {
	mu    sync.Mutex
	items []childCall
}

type childCall struct {
	ID     string
	Reason cause.ChildReason
	Owner  string
	Child  string
	Retry  int
	// Version and Labels are the child's as the handler saw it.
	Version string
	Labels  map[string]string
}

func (c *childCalls) add(id string, owner, child client.Object, cc *cause.Child) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.items = append(c.items, childCall{ID: id, Reason: cc.Reason, Owner: owner.GetName(), Child: child.GetName(), Retry: cc.Retry,
		Version: child.GetResourceVersion(), Labels: child.GetLabels()})
}

// saw reports whether a handler saw a child in that state.
func (c *childCalls) saw(id string, match func(childCall) bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, item := range c.items {
		if item.ID == id && match(item) {
			return true
		}
	}
	return false
}

func (c *childCalls) count(id string, reason cause.ChildReason, child string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, item := range c.items {
		if item.ID == id && item.Reason == reason && item.Child == child {
			n++
		}
	}
	return n
}

// keepChild makes or updates the owner's ConfigMap <name>-child with
// data.field = spec.field, as examples/20-children does.
func keepChild(ctx context.Context, owner *unstructured.Unstructured) error {
	field, _, _ := unstructured.NestedString(owner.Object, "spec", "field")
	c := handlers.Client(ctx)
	cm := &corev1.ConfigMap{}
	err := c.Get(ctx, types.NamespacedName{Namespace: owner.GetNamespace(), Name: owner.GetName() + "-child"}, cm)
	switch {
	case apierrors.IsNotFound(err):
		cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: owner.GetName() + "-child"}, Data: map[string]string{"field": field}}
		if err := hierarchies.Adopt(cm, owner, hierarchies.Strict()); err != nil {
			return err
		}
		return c.Create(ctx, cm)
	case err != nil:
		return err
	case cm.Data["field"] == field:
		return nil
	}
	cm.Data = map[string]string{"field": field}
	return c.Update(ctx, cm)
}

// putBack makes the child what the owner wants again: the child given
// is its latest state (the cache that Client(ctx) reads may lag behind).
func putBack(ctx context.Context, owner *unstructured.Unstructured, child *corev1.ConfigMap, reason cause.ChildReason) error {
	if reason == cause.ChildDeleted {
		return keepChild(ctx, owner)
	}
	field, _, _ := unstructured.NestedString(owner.Object, "spec", "field")
	if child.Data["field"] == field {
		return nil
	}
	child.Data = map[string]string{"field": field}
	return handlers.Client(ctx).Update(ctx, child)
}

func getChild(t *testing.T, ns, name string) (*corev1.ConfigMap, bool) {
	t.Helper()
	cm := &corev1.ConfigMap{}
	err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, cm)
	if apierrors.IsNotFound(err) {
		return nil, false
	}
	if err != nil {
		t.Fatalf("get the child %s: %v", name, err)
	}
	return cm, true
}

// A child deleted or edited by hand is put back by a child handler, which
// hears of it with its owner; the owner's change handlers do not run
// again; a handler of a field hears only of that field's changes; a
// failing handler is retried; children that Adopt did not label are not
// watched.
func TestChildrenWakeTheirOwner(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	reg, kind := kex()
	var owner calls
	handlers.OnCreate(kind, "create_fn", func(ctx context.Context, obj *unstructured.Unstructured, c *cause.Change) (any, error) {
		owner.add(c)
		return nil, keepChild(ctx, obj)
	})
	handlers.OnUpdate(kind, "update_fn", func(ctx context.Context, obj *unstructured.Unstructured, c *cause.Change) (any, error) {
		owner.add(c)
		return nil, keepChild(ctx, obj)
	}, handlers.Field("spec.field"))
	var got childCalls
	configMaps := handlers.Children[*corev1.ConfigMap](kind)
	// Registered first, so that it runs before restore in each reconcile.
	handlers.OnChild(configMaps, "watch", func(ctx context.Context, obj *unstructured.Unstructured, child *corev1.ConfigMap, c *cause.Child) error {
		got.add(c.HandlerID, obj, child, c)
		return nil
	}, handlers.Field("data.field"))
	failOnce := true
	handlers.OnChild(configMaps, "restore", func(ctx context.Context, obj *unstructured.Unstructured, child *corev1.ConfigMap, c *cause.Child) error {
		got.add(c.HandlerID, obj, child, c)
		if c.Reason == cause.ChildDeleted && failOnce {
			failOnce = false
			return handlers.Temporary(errors.New("not now"), 100*time.Millisecond)
		}
		return putBack(ctx, obj, child, c.Reason)
	}, handlers.Backoff(100*time.Millisecond))
	op := env.StartOperator(t, ns, reg, handlers.Options{})

	create(t, exampleObject(t, ns))
	eventually(t, "the child is created and heard of", func() bool {
		return got.count("restore", cause.ChildCreated, "kopf-example-1-child") == 1
	})
	first, _ := getChild(t, ns, "kopf-example-1-child")
	if first.Labels[hierarchies.OwnerKindLabel] != "kopfexample.kopf.dev" {
		t.Errorf("the child's labels are %v, want the owner's kind among them", first.Labels)
	}

	// Deleted by hand: the first attempt fails, the retry puts it back.
	if err := env.Client.Delete(context.Background(), first); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the deleted child is put back", func() bool {
		cm, ok := getChild(t, ns, "kopf-example-1-child")
		return ok && cm.UID != first.UID && cm.Data["field"] == "value"
	})
	if n := got.count("restore", cause.ChildDeleted, "kopf-example-1-child"); n != 2 {
		t.Errorf("the deletion was heard %d times, want 2 (a temporary failure, then its retry)", n)
	}

	// Edited by hand: put back; the field's handler hears of it.
	mergePatchChild(t, ns, "kopf-example-1-child", `{"data":{"field":"by hand"}}`)
	eventually(t, "the edited child is put back", func() bool {
		cm, _ := getChild(t, ns, "kopf-example-1-child")
		return cm != nil && cm.Data["field"] == "value" && got.count("watch/data.field", cause.ChildChanged, "kopf-example-1-child") >= 1
	})
	// A label alone is no change of the field. (Once the child's latest
	// state is handled, so that no earlier change is merged with it.)
	eventually(t, "the child's latest state is handled", func() bool {
		cm, _ := getChild(t, ns, "kopf-example-1-child")
		return cm != nil && got.saw("restore", func(c childCall) bool { return c.Version == cm.ResourceVersion })
	})
	watched := got.count("watch/data.field", cause.ChildChanged, "kopf-example-1-child")
	mergePatchChild(t, ns, "kopf-example-1-child", `{"metadata":{"labels":{"touched":"yes"}}}`)
	eventually(t, "the label's change is heard", func() bool {
		return got.saw("restore", func(c childCall) bool { return c.Labels["touched"] == "yes" })
	})
	if n := got.count("watch/data.field", cause.ChildChanged, "kopf-example-1-child"); n != watched {
		t.Errorf("the field's handler heard of a label's change: %d calls, want %d", n, watched)
	}

	// A ConfigMap owned by the object, but not adopted (no label): the
	// children's cache does not hold it.
	stray := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "stray"}}
	obj := get(t, ns, "kopf-example-1")
	if err := hierarchies.AppendOwnerReference(stray, obj); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(context.Background(), stray); err != nil {
		t.Fatal(err)
	}

	// The owner's change handlers ran once each: at creation. The
	// child's changes, the operator's own included, woke none of them.
	mergePatch(t, ns, "kopf-example-1", `{"spec":{"field":"changed"}}`, false)
	eventually(t, "the update reaches the child", func() bool {
		cm, _ := getChild(t, ns, "kopf-example-1-child")
		return cm != nil && cm.Data["field"] == "changed" && got.count("watch/data.field", cause.ChildChanged, "kopf-example-1-child") > watched
	})
	if n := len(owner.of("create_fn")); n != 1 {
		t.Errorf("the owner's create handler ran %d times, want 1", n)
	}
	if n := len(owner.of("update_fn/spec.field")); n != 1 {
		t.Errorf("the owner's update handler ran %d times, want 1 (for the spec's change)", n)
	}
	if n := got.count("restore", cause.ChildCreated, "stray") + got.count("restore", cause.ChildExisting, "stray"); n != 0 {
		t.Errorf("the unlabelled ConfigMap was heard of %d times, want 0", n)
	}

	// Deleting the owner deletes the child (the garbage collector is not
	// in envtest: by hand); nothing is put back for an owner being
	// deleted or gone.
	if err := env.Client.Delete(context.Background(), kexRef(ns, "kopf-example-1")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the owner is gone", func() bool { return gone(t, ns, "kopf-example-1") })
	skipped := op.Logs.Count("The child's owner is not here (gone, or not served): nobody to tell.")
	deletions := got.count("restore", cause.ChildDeleted, "kopf-example-1-child")
	cm, _ := getChild(t, ns, "kopf-example-1-child")
	if err := env.Client.Delete(context.Background(), cm); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the child's deletion finds no owner", func() bool {
		return op.Logs.Count("The child's owner is not here (gone, or not served): nobody to tell.") > skipped
	})
	op.Stop(t)
	if _, ok := getChild(t, ns, "kopf-example-1-child"); ok {
		t.Error("the child of a deleted owner was put back")
	}
	if n := got.count("restore", cause.ChildDeleted, "kopf-example-1-child"); n != deletions {
		t.Errorf("a child handler ran for the child of a gone owner: %d deletions heard, want %d", n, deletions)
	}
}

// At the start, the children there are heard of as existing.
func TestChildrenExistingAtStart(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	reg, kind := kex()
	handlers.OnCreate(kind, "create_fn", func(ctx context.Context, obj *unstructured.Unstructured, c *cause.Change) (any, error) {
		return nil, keepChild(ctx, obj)
	})
	op := env.StartOperator(t, ns, reg, handlers.Options{})
	create(t, exampleObject(t, ns))
	eventually(t, "the child is created", func() bool { _, ok := getChild(t, ns, "kopf-example-1-child"); return ok })
	op.Stop(t)

	reg, kind = kex()
	handlers.OnCreate(kind, "create_fn", nothing)
	var got childCalls
	handlers.OnChild(handlers.Children[*corev1.ConfigMap](kind), "hear", func(ctx context.Context, obj *unstructured.Unstructured, child *corev1.ConfigMap, c *cause.Child) error {
		got.add(c.HandlerID, obj, child, c)
		return nil
	})
	env.StartOperator(t, ns, reg, handlers.Options{})
	eventually(t, "the child is heard of as existing", func() bool {
		return got.count("hear", cause.ChildExisting, "kopf-example-1-child") == 1
	})
}

func mergePatchChild(t *testing.T, ns, name, patch string) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if err := env.Client.Patch(context.Background(), cm, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatalf("patch the child %s: %v", name, err)
	}
}

// A child deleted while the operator is frozen brings no event, and the
// listing after the freeze lacks it: the operator still tells its
// deletion then, and the child is put back; the watch of children closes
// with the freeze, and lists the children there as existing after it.
func TestChildDeletedWhileFrozenIsPutBack(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	createPeering(t, ns, "default")
	reg, kind := kex()
	handlers.OnCreate(kind, "create_fn", func(ctx context.Context, obj *unstructured.Unstructured, c *cause.Change) (any, error) {
		return nil, keepChild(ctx, obj)
	})
	var got childCalls
	handlers.OnChild(handlers.Children[*corev1.ConfigMap](kind), "restore", func(ctx context.Context, obj *unstructured.Unstructured, child *corev1.ConfigMap, c *cause.Child) error {
		got.add(c.HandlerID, obj, child, c)
		return putBack(ctx, obj, child, c.Reason)
	})
	op := env.StartOperator(t, ns, reg, handlers.Options{Identity: "go-operator"})
	create(t, exampleObject(t, ns))
	eventually(t, "the child is made and heard of", func() bool {
		return got.count("restore", cause.ChildCreated, "kopf-example-1-child") == 1
	})
	first, _ := getChild(t, ns, "kopf-example-1-child")

	setPeer(t, ns, "default", "python-operator", kopfRecord(100, 60))
	eventually(t, "the operator freezes", func() bool {
		return len(op.Logs.Messages("Pausing operations in favour of [<Peer python-operator")) == 1
	})
	if err := env.Client.Delete(context.Background(), first); err != nil {
		t.Fatal(err)
	}
	if got.count("restore", cause.ChildDeleted, "kopf-example-1-child") != 0 {
		t.Fatal("the frozen operator heard of a child's deletion")
	}
	setPeer(t, ns, "default", "python-operator", nil)
	eventually(t, "the resumed operator puts the child back", func() bool {
		cm, ok := getChild(t, ns, "kopf-example-1-child")
		return ok && cm.UID != first.UID && got.count("restore", cause.ChildDeleted, "kopf-example-1-child") == 1
	})
}
