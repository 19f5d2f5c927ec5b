package sharding

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kopf-go/kopf/handlers"
	"github.com/kopf-go/kopf/internal/ring"
	"github.com/kopf-go/kopf/pkg/kopftest"

	"github.com/kopf-go/kopf/pkg/cause"
)

// events records when things happened, by replica and kind.
type events struct {
	mu sync.Mutex
	at map[string]time.Time
}

func (e *events) mark(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.at == nil {
		e.at = map[string]time.Time{}
	}
	if _, seen := e.at[key]; !seen {
		e.at[key] = time.Now()
	}
}

func (e *events) when(key string) (time.Time, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	at, ok := e.at[key]
	return at, ok
}

// A member whose Lease is deleted by hand fences itself at its next
// renewal: the context of every handler and daemon is cancelled then,
// a daemon's cancellation backoff of a minute notwithstanding,
// Options.Sharding.Lost is closed, and the member's manager stops with
// ErrLeaseDeleted. Its object moves to the
// other member only once its lease has run out, not when the Lease went.
func TestFenceCancelsEverythingAtOnce(t *testing.T) {
	kopftest.NoLeaks(t)
	r := newRing(t)
	var ev events
	r.register = func(reg *handlers.Registry, res *handlers.Resource[*unstructured.Unstructured], name string) {
		handlers.OnCreate(res, "hold", func(ctx context.Context, obj *unstructured.Unstructured, c *cause.Change) (any, error) {
			defer r.det.enter(obj.GetName(), name, "hold")()
			ev.mark(name + " holds")
			<-ctx.Done()
			ev.mark(name + " hold cancelled")
			return nil, ctx.Err()
		})
		handlers.Daemon(res, "patient", func(ctx context.Context, obj *unstructured.Unstructured, d *cause.Daemon) (any, error) {
			defer r.det.enter(obj.GetName(), name, "patient")()
			ev.mark(name + " patient")
			<-ctx.Done()
			ev.mark(name + " patient cancelled")
			return nil, nil
		}, handlers.CancellationBackoff(time.Minute))
	}
	r.start("a")
	r.start("b")
	names := r.createObjects(1)
	var owner, other string
	kopftest.Eventually(t, "the object's owner holds it", 30*time.Second, func() bool {
		for _, name := range []string{"a", "b"} {
			_, holds := ev.when(name + " holds")
			_, patient := ev.when(name + " patient")
			if holds && patient {
				owner = name
				return true
			}
		}
		return false
	})
	other = map[string]string{"a": "b", "b": "a"}[owner]

	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: r.ns, Name: "kopf-shard-" + ringName + "-" + r.member(owner)}}
	if err := env.Client.Delete(context.Background(), lease); err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	select {
	case <-r.replicas[owner].lost:
	case <-time.After(10 * time.Second):
		t.Fatal("Options.Sharding.Lost was not closed at the fence")
	}
	if err := r.replicas[owner].op.Exited(t); !errors.Is(err, ring.ErrLeaseDeleted) {
		t.Errorf("the member whose Lease was deleted exited with %v, want %v", err, ring.ErrLeaseDeleted)
	}
	delete(r.replicas, owner)
	for _, what := range []string{"hold", "patient"} {
		at, ok := ev.when(owner + " " + what + " cancelled")
		if !ok {
			t.Fatalf("the %s of %s was not cancelled", what, owner)
		}
		// The member notices at its next renewal, a renew period later at
		// the most; the slack is for a loaded machine.
		if took := at.Sub(deleted); took > renewPeriod+time.Second {
			t.Errorf("the %s of %s was cancelled %s after its Lease was deleted, want at the next renewal", what, owner, took)
		}
	}
	kopftest.Eventually(t, "the object is held by "+other, 30*time.Second, func() bool {
		_, ok := ev.when(other + " holds")
		return ok
	})
	took, _ := ev.when(other + " holds")
	// The Lease was last renewed a renew period before its deletion at the
	// earliest: the lease runs out 2.5 s after the deletion at the least.
	if gap := took.Sub(deleted); gap < leaseDuration-renewPeriod {
		t.Errorf("%s took the object over %s after the Lease of %s was deleted, before its lease had run out", other, gap, owner)
	}
	t.Logf("%s took %s over %s after its Lease was deleted", other, names[0], took.Sub(deleted).Round(10*time.Millisecond))
	if o := r.det.overlapping(); len(o) > 0 {
		t.Errorf("executions overlapped: %v", o)
	}
}

// An object deleted while its owner is handing it over is not
// handed over: its owner completes the deletion, its delete handler runs
// once, there, and its daemon learns that the object was deleted.
func TestDeletionDuringAHandover(t *testing.T) {
	kopftest.NoLeaks(t)
	r := newRing(t)
	var mu sync.Mutex
	deletedOn := map[string]int{}
	reasons := map[string]cause.StopReason{}
	stopping := map[string]bool{}
	r.register = func(reg *handlers.Registry, res *handlers.Resource[*unstructured.Unstructured], name string) {
		handlers.Daemon(res, "slow", func(ctx context.Context, obj *unstructured.Unstructured, d *cause.Daemon) (any, error) {
			defer r.det.enter(obj.GetName(), name, "slow")()
			<-d.Stopped()
			mu.Lock()
			stopping[name] = true
			mu.Unlock()
			time.Sleep(2 * time.Second) // slow to honour its stop, within the margin
			mu.Lock()
			reasons[name] = d.StopReason()
			mu.Unlock()
			return nil, nil
		})
		handlers.OnDelete(res, "where", func(ctx context.Context, obj *unstructured.Unstructured, c *cause.Change) (any, error) {
			mu.Lock()
			deletedOn[name]++
			mu.Unlock()
			return nil, nil
		})
	}
	r.start("a")
	names := r.createObjects(1)
	r.waitSettled(names, 30*time.Second)
	next := r.startHashing(r.hashKey(names[0]), "a")
	// The handover has begun, and is held up by the slow daemon on a.
	kopftest.Eventually(t, "the handover to "+next+" begins", 10*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return stopping["a"]
	})

	if err := env.Client.Delete(context.Background(), r.object(names[0])); err != nil {
		t.Fatal(err)
	}
	r.waitGone(names, 30*time.Second)
	mu.Lock()
	defer mu.Unlock()
	if deletedOn["a"] != 1 || deletedOn[next] != 0 {
		t.Errorf("the delete handler ran %v, want once, on a", deletedOn)
	}
	if reasons["a"]&cause.StopResourceDeleted == 0 {
		t.Errorf("the daemon on a stopped for %s, want RESOURCE_DELETED among the reasons", reasons["a"])
	}
	if got := r.det.creates(names[0]); len(got) != 1 || got[0] != "a" {
		t.Errorf("the create handler ran on %v, want on a alone", got)
	}
	if _, ran := reasons[next]; ran {
		t.Errorf("the daemon ran on %s, which the object was never handed to", next)
	}
	if o := r.det.overlapping(); len(o) > 0 {
		t.Errorf("executions overlapped: %v", o)
	}
}
