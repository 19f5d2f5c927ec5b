package integration

import (
	"context"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kopf-go/kopf/handlers"

	"github.com/kopf-go/kopf/pkg/cause"
)

// ticks records when a timer was called and whether calls overlapped.
type ticks struct {
	mu       sync.Mutex
	at       []time.Time
	running  bool
	overlaps int
}

func (k *ticks) begin() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.running {
		k.overlaps++
	}
	k.running = true
	k.at = append(k.at, time.Now())
	return len(k.at)
}

func (k *ticks) end() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.running = false
}

func (k *ticks) count() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.at)
}

// Kopf's acceptance item 17, against a real API server (the exact timing
// is unit-tested with a fake clock): an interval timer writes its result
// every tick, never overlaps itself, and stops with its object; an idle
// timer waits until the object has not changed for the idle time.
func TestTimers(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	reg, kind := kex()
	var interval, idle ticks
	const step = 300 * time.Millisecond
	handlers.Timer(kind, "tick", func(ctx context.Context, obj *unstructured.Unstructured, d *cause.Daemon) (any, error) {
		n := interval.begin()
		defer interval.end()
		time.Sleep(step / 2) // a slow tick must not overlap the next one
		return map[string]any{"n": n}, nil
	}, handlers.Interval(step))
	created := time.Now()
	handlers.Timer(kind, "idle", func(ctx context.Context, obj *unstructured.Unstructured, d *cause.Daemon) (any, error) {
		idle.begin()
		defer idle.end()
		return nil, nil
	}, handlers.Idle(time.Second))
	op := env.StartOperator(t, ns, reg, handlers.Options{})
	create(t, exampleObject(t, ns))

	eventually(t, "several ticks land in status", func() bool {
		n, _, _ := unstructured.NestedInt64(get(t, ns, "kopf-example-1").Object, "status", "tick", "n")
		return n >= 3
	})
	eventually(t, "the idle timer fires", func() bool { return idle.count() >= 1 })
	if waited := idle.at[0].Sub(created); waited < time.Second {
		t.Errorf("the idle timer fired %v after the creation, before its idle time", waited)
	}
	// A change postpones the next idle call.
	changed := time.Now()
	mergePatch(t, ns, "kopf-example-1", `{"spec":{"field":"changed"}}`, false)
	eventually(t, "the idle timer fires again", func() bool { return idle.count() >= 2 })
	if waited := idle.at[1].Sub(changed); waited < time.Second-50*time.Millisecond {
		t.Errorf("the idle timer fired %v after a change, before its idle time", waited)
	}
	interval.mu.Lock()
	for i := 1; i < len(interval.at); i++ {
		if gap := interval.at[i].Sub(interval.at[i-1]); gap < step+step/2-50*time.Millisecond {
			t.Errorf("ticks %d and %d were %v apart; a tick of %v plus the interval of %v is the least", i-1, i, gap, step/2, step)
		}
	}
	if interval.overlaps > 0 {
		t.Errorf("the timer overlapped itself %d times", interval.overlaps)
	}
	interval.mu.Unlock()

	if err := env.Client.Delete(context.Background(), exampleObject(t, ns)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the object goes", func() bool { return gone(t, ns, "kopf-example-1") })
	if op.Logs.Count("Timer 'tick' has exited on request and will not be retried or restarted.") != 1 {
		t.Error("the timer did not stop with its object")
	}
}
