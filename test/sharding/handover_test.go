package sharding

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/handlers"
	"github.com/kopf-go/kopf/pkg/kopftest"

	"github.com/kopf-go/kopf/pkg/cause"
)

// A handler that fails temporarily on one replica goes on with its
// retries on the next one after a handover, its retry count intact: the
// count lives on the object, not in the replica.
func TestRetriesSurviveHandover(t *testing.T) {
	kopftest.NoLeaks(t)
	r := newRing(t)
	type attempt struct {
		replica string
		retry   int
	}
	var mu sync.Mutex
	var attempts []attempt
	r.register = func(reg *handlers.Registry, res *handlers.Resource[*unstructured.Unstructured], name string) {
		handlers.OnCreate(res, "flaky", func(ctx context.Context, obj *unstructured.Unstructured, c *cause.Change) (any, error) {
			defer r.det.enter(obj.GetName(), name, "flaky")()
			mu.Lock()
			attempts = append(attempts, attempt{name, c.Retry})
			mu.Unlock()
			if name == "a" {
				return nil, handlers.Temporary(errors.New("fails on a"), 500*time.Millisecond)
			}
			return nil, nil
		})
	}
	count := func(replica string) int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, a := range attempts {
			if a.replica == replica {
				n++
			}
		}
		return n
	}
	r.start("a")
	names := r.createObjects(1)
	kopftest.Eventually(t, "two failed attempts on a", 30*time.Second, func() bool { return count("a") >= 2 })

	next := r.startHashing(r.hashKey(names[0]), "a")
	kopftest.Eventually(t, "an attempt on "+next, 30*time.Second, func() bool { return count(next) >= 1 })
	r.waitSettled(names, 30*time.Second)

	onNext := count(next)
	mu.Lock()
	defer mu.Unlock()
	onA := 0
	for _, a := range attempts {
		switch a.replica {
		case "a":
			if a.retry != onA {
				t.Errorf("attempt %d on a has retry %d", onA, a.retry)
			}
			onA++
		case next:
			if a.retry != onA {
				t.Errorf("the attempt on %s has retry %d, want %d: the count of a's attempts", next, a.retry, onA)
			}
		}
	}
	if n := onNext; n != 1 {
		t.Errorf("%d attempts on %s, want 1 (it succeeds)", n, next)
	}
	if o := r.det.overlapping(); len(o) > 0 {
		t.Errorf("overlapping executions: %v", o)
	}
}

// Replicas join, leave and crash while objects are created, changed and
// deleted: nothing runs for one object on two replicas at once, every
// change is handled once the ring has settled, and every deletion
// completes.
func TestRingChurn(t *testing.T) {
	kopftest.NoLeaks(t)
	r := newRing(t)
	names := r.startSettled([]string{"a", "b", "c"}, 120, time.Minute)

	ch := startChurn(t, r, names)
	r.start("d")
	r.start("e")
	time.Sleep(2 * time.Second)
	owned, _, _ := r.owners()
	crashed := time.Now()
	r.crash("a")
	var aObjects []string
	for _, name := range names {
		if owned[name] == r.member("a") {
			aObjects = append(aObjects, name)
		}
	}
	kopftest.Eventually(t, "the crashed replica's objects run elsewhere", time.Minute, func() bool {
		for _, name := range aObjects {
			if ch.isDeleted(name) {
				continue
			}
			if len(r.det.daemonHosts(name)) == 0 {
				return false
			}
		}
		return true
	})
	t.Logf("the crashed replica's %d objects run elsewhere %s after the crash (lease duration %s)",
		len(aObjects), time.Since(crashed).Round(100*time.Millisecond), leaseDuration)
	r.stop("b")
	r.stop("c")
	ch.stop()

	alive := ch.alive()
	r.waitSettled(alive, time.Minute)
	for _, name := range alive {
		want := ch.final(name)
		kopftest.Eventually(t, "the last change of "+name, 30*time.Second, func() bool { return r.det.lastHandled(name) == want })
	}
	for _, name := range ch.deletedNames() {
		kopftest.Eventually(t, name+" is gone", 30*time.Second, func() bool {
			err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(r.object(name)), r.object(name))
			return client.IgnoreNotFound(err) == nil && err != nil
		})
		if n := r.det.deletions(name); n != 1 {
			t.Errorf("%s: delete handler succeeded %d times, want once", name, n)
		}
	}
	if o := r.det.overlapping(); len(o) > 0 {
		t.Errorf("%d overlapping executions, e.g. %s", len(o), o[0])
	}
}

// churn changes objects at random and deletes some, until stopped.
type churn struct {
	mu      sync.Mutex
	values  map[string]string
	deleted map[string]bool
	names   []string
	done    chan struct{}
	wg      sync.WaitGroup
}

func startChurn(t *testing.T, r *testRing, names []string) *churn {
	ch := &churn{values: map[string]string{}, deleted: map[string]bool{}, names: names, done: make(chan struct{})}
	for _, name := range names {
		ch.values[name] = "v0"
	}
	ch.wg.Add(1)
	go func() {
		defer ch.wg.Done()
		for i := 1; ; i++ {
			select {
			case <-ch.done:
				return
			case <-time.After(20 * time.Millisecond):
			}
			name := names[rand.IntN(len(names))]
			if ch.isDeleted(name) {
				continue
			}
			if i%25 == 0 {
				ch.mu.Lock()
				ch.deleted[name] = true
				ch.mu.Unlock()
				if err := env.Client.Delete(context.Background(), r.object(name)); err != nil {
					t.Errorf("delete %s: %v", name, err)
				}
				continue
			}
			value := fmt.Sprintf("v%d", i)
			body := fmt.Sprintf(`{"spec":{"field":%q}}`, value)
			if err := env.Client.Patch(context.Background(), r.object(name), client.RawPatch(types.MergePatchType, []byte(body))); err != nil {
				t.Errorf("change %s: %v", name, err)
				continue
			}
			ch.mu.Lock()
			ch.values[name] = value
			ch.mu.Unlock()
		}
	}()
	return ch
}

func (ch *churn) stop() { close(ch.done); ch.wg.Wait() }

func (ch *churn) isDeleted(name string) bool {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return ch.deleted[name]
}

func (ch *churn) final(name string) string {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return ch.values[name]
}

func (ch *churn) alive() []string {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	var out []string
	for _, name := range ch.names {
		if !ch.deleted[name] {
			out = append(out, name)
		}
	}
	return out
}

func (ch *churn) deletedNames() []string {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	var out []string
	for _, name := range ch.names {
		if ch.deleted[name] {
			out = append(out, name)
		}
	}
	return out
}

// An object handed over leaves the old owner's cache with a DELETED watch
// event; its on-event handlers hear nothing of it, since it was not
// deleted. A real deletion is heard, by the owner.
func TestOnEventHandlersHearNoHandover(t *testing.T) {
	kopftest.NoLeaks(t)
	r := newRing(t)
	var mu sync.Mutex
	deletedOn := map[string][]string{}
	r.register = func(reg *handlers.Registry, res *handlers.Resource[*unstructured.Unstructured], name string) {
		handlers.OnEvent(res, "events", func(ctx context.Context, obj *unstructured.Unstructured, e *cause.Event) (any, error) {
			if e.Type == "DELETED" {
				mu.Lock()
				deletedOn[obj.GetName()] = append(deletedOn[obj.GetName()], name)
				mu.Unlock()
			}
			return nil, nil
		})
	}
	deleted := func(name string) []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), deletedOn[name]...)
	}
	r.start("a")
	names := r.createObjects(20)
	r.waitSettled(names, time.Minute)
	r.start("b")
	r.waitSettled(names, time.Minute)
	owner, _, _ := r.owners()
	moved := 0
	for _, name := range names {
		if owner[name] == r.member("b") {
			moved++
		}
		if got := deleted(name); len(got) > 0 {
			t.Errorf("%s: on-event handlers heard DELETED on %v, but it was only handed over", name, got)
		}
	}
	if moved == 0 {
		t.Fatal("no object moved to b: the test proves nothing")
	}
	victim := names[0]
	want := r.replicaOf(owner[victim])
	if err := env.Client.Delete(context.Background(), r.object(victim)); err != nil {
		t.Fatal(err)
	}
	kopftest.Eventually(t, "the deletion is heard", 30*time.Second, func() bool { return len(deleted(victim)) > 0 })
	if got := deleted(victim); len(got) != 1 || got[0] != want {
		t.Errorf("the deletion of %s was heard on %v, want once on its owner %s", victim, got, want)
	}
}
