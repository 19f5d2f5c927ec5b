package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kopf-go/kopf/handlers"

	"github.com/kopf-go/kopf/pkg/cause"
	"github.com/kopf-go/kopf/pkg/filter"
	"github.com/kopf-go/kopf/pkg/memo"
)

// eventLog records the events an on-event handler saw.
type eventLog struct {
	mu     sync.Mutex
	events []string
}

func (l *eventLog) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, s)
}

func (l *eventLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.events)
}

// Kopf's acceptance item 21: on-event handlers see the listing (no type),
// additions, modifications and deletions; they write no progress and no
// finalizer; their errors are logged and ignored; their results go to
// status.
func TestOnEventHandlers(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	listed := named(t, ns, "listed")
	create(t, listed)
	reg, kind := kex()
	var log eventLog
	handlers.OnEvent(kind, "spy", func(ctx context.Context, obj *unstructured.Unstructured, e *cause.Event) (any, error) {
		log.add(obj.GetName() + ":" + e.Type)
		if e.Type == cause.EventDeleted {
			return nil, nil
		}
		return map[string]any{"seen": e.Type}, nil
	})
	handlers.OnEvent(kind, "failing", func(ctx context.Context, obj *unstructured.Unstructured, e *cause.Event) (any, error) {
		return nil, errString("a spy's bad day")
	})
	op := env.StartOperator(t, ns, reg, handlers.Options{})
	eventually(t, "the listing is seen", func() bool { return slices.Contains(log.all(), "listed:") })

	added := named(t, ns, "added")
	create(t, added)
	eventually(t, "the addition is seen and its result stored", func() bool {
		seen, _, _ := unstructured.NestedString(get(t, ns, "added").Object, "status", "spy", "seen")
		return slices.Contains(log.all(), "added:ADDED") && seen != ""
	})
	mergePatch(t, ns, "added", `{"spec":{"field":"changed"}}`, false)
	eventually(t, "the modification is seen", func() bool { return slices.Contains(log.all(), "added:MODIFIED") })
	if err := env.Client.Delete(context.Background(), added); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the deletion is seen", func() bool { return slices.Contains(log.all(), "added:DELETED") })
	for _, name := range []string{"listed"} {
		obj := get(t, ns, name)
		if len(obj.GetFinalizers()) != 0 {
			t.Errorf("%s got finalizers %v", name, obj.GetFinalizers())
		}
		for key := range obj.GetAnnotations() {
			if strings.HasPrefix(key, "kopf.zalando.org/") {
				t.Errorf("%s got the annotation %s", name, key)
			}
		}
	}
	if len(op.Logs.Messages("Handler 'failing' failed with an exception and will ignore it: a spy's bad day")) == 0 {
		t.Error("the failing spy was not logged")
	}
}

// Kopf's acceptance item 25: an index maps objects to keys and values;
// change handlers started at startup see it complete; a deleted object
// leaves it; nil from the index handler changes nothing; handlers of
// another kind read it.
func TestIndices(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	for i, phase := range []string{"Pending", "Running", "Running"} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm-" + string(rune('a'+i)), Namespace: ns,
			Labels: map[string]string{"phase": phase}}}
		if err := env.Client.Create(context.Background(), cm); err != nil {
			t.Fatal(err)
		}
	}
	create(t, named(t, ns, "first"))
	reg, kind := kex()
	cms := handlers.For[*corev1.ConfigMap](reg)
	handlers.Index(cms, "by_phase", func(ctx context.Context, cm *corev1.ConfigMap, c *cause.Change) (any, error) {
		if cm.Labels["phase"] == "skip" {
			return nil, nil // no change
		}
		return map[string]string{cm.Labels["phase"]: cm.Name}, nil
	}, handlers.Labels{"phase": filter.Present})
	var mu sync.Mutex
	running := map[string][]any{}
	handlers.OnCreate(kind, "create_fn", func(ctx context.Context, obj *unstructured.Unstructured, c *cause.Change) (any, error) {
		mu.Lock()
		defer mu.Unlock()
		running[obj.GetName()] = c.Indices.Get("by_phase").Get("Running")
		return nil, nil
	})
	env.StartOperator(t, ns, reg, handlers.Options{})
	seen := func(name string) []any {
		eventually(t, name+" is handled", func() bool { return isHandled(t, ns, name) })
		mu.Lock()
		defer mu.Unlock()
		return running[name]
	}
	if diff := cmp.Diff([]any{"cm-b", "cm-c"}, seen("first")); diff != "" {
		t.Errorf("the index at the first creation -want +got:\n%s", diff)
	}

	if err := env.Client.Delete(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm-b", Namespace: ns}}); err != nil {
		t.Fatal(err)
	}
	var cmC corev1.ConfigMap
	if err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "cm-c"}, &cmC); err != nil {
		t.Fatal(err)
	}
	cmC.Labels["phase"] = "skip"
	if err := env.Client.Update(context.Background(), &cmC); err != nil {
		t.Fatal(err)
	}
	// A config map that joins later, after the deletion and the update,
	// is the barrier: once it is in the index, the index has seen both.
	late := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm-d", Namespace: ns, Labels: map[string]string{"phase": "Running"}}}
	if err := env.Client.Create(context.Background(), late); err != nil {
		t.Fatal(err)
	}
	var got []any
	for attempt := 0; attempt < 50; attempt++ {
		name := fmt.Sprintf("probe-%d", attempt)
		create(t, named(t, ns, name))
		got = seen(name)
		if slices.Contains(got, any("cm-d")) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if diff := cmp.Diff([]any{"cm-c", "cm-d"}, got); diff != "" {
		t.Errorf("after the deletion of cm-b and cm-c's nil result -want +got:\n%s", diff)
	}
}

// Memos: each object's memo starts as a shallow copy of the operator's,
// and is shared by that object's change handlers, daemons and on-event
// handlers; other objects have their own.
func TestMemos(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	reg, kind := kex()
	shared := &sync.Map{}
	operatorMemo := &memo.Memo{}
	operatorMemo.Set("shared", shared)
	operatorMemo.Set("greeting", "hello")
	handlers.OnCreate(kind, "create_fn", func(ctx context.Context, obj *unstructured.Unstructured, c *cause.Change) (any, error) {
		c.Memo.Set("from-create", obj.GetName())
		c.Memo.Set("greeting", "changed by "+obj.GetName())
		return nil, nil
	})
	handlers.Daemon(kind, "reader", func(ctx context.Context, obj *unstructured.Unstructured, d *cause.Daemon) (any, error) {
		for {
			if v, ok := d.Memo.Get("from-create"); ok {
				s, _ := d.Memo.Get("shared")
				s.(*sync.Map).Store(obj.GetName(), v)
				return nil, nil
			}
			if !d.Sleep(ctx, 50*time.Millisecond) {
				return nil, nil
			}
		}
	})
	env.StartOperator(t, ns, reg, handlers.Options{Memo: operatorMemo})
	create(t, named(t, ns, "a"))
	create(t, named(t, ns, "b"))
	eventually(t, "each daemon sees its own object's memo", func() bool {
		a, okA := shared.Load("a")
		b, okB := shared.Load("b")
		return okA && okB && a == "a" && b == "b"
	})
	if v, _ := operatorMemo.Get("greeting"); v != "hello" {
		t.Errorf("an object's memo changed the operator's: %v", v)
	}
}
