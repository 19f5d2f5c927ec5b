package integration

import (
	"testing"
	"time"

	"github.com/kopf-go/kopf/handlers"
)

// Kopf's acceptance item 19: after its own write, the operator does not run
// change handlers on a body from before that write. The client here serves
// stale reads for a while after each write, as a lagging cache does; with
// the consistency wait disabled, the first handler runs twice, which is the
// bug the wait prevents.
func TestConsistencyAfterOwnWrites(t *testing.T) {
	for _, tc := range []struct {
		name    string
		timeout time.Duration
		check   func(t *testing.T, aCalls int)
	}{
		{"with the wait", 0, func(t *testing.T, aCalls int) {
			if aCalls != 1 {
				t.Errorf("create_a ran %d times, want 1: a stale body was handled", aCalls)
			}
		}},
		{"without the wait", -1, func(t *testing.T, aCalls int) {
			if aCalls < 2 {
				t.Errorf("create_a ran %d times; without the wait the stale body should have been handled again", aCalls)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkLeaks(t)
			ns := env.Namespace(t)
			reg, kind := kex()
			var seen calls
			handlers.OnCreate(kind, "create_a", seen.record)
			handlers.OnCreate(kind, "create_b", seen.record)
			f := &faults{lag: 1500 * time.Millisecond}
			op := env.StartOperator(t, ns, reg, handlers.Options{ConsistencyTimeout: tc.timeout, WrapClient: f.wrap})
			create(t, exampleObject(t, ns))
			eventually(t, "creation is handled", func() bool { return op.Logs.Count("Creation is processed: 2 succeeded; 0 failed.") >= 1 })
			tc.check(t, len(seen.of("create_a")))
			if tc.timeout == 0 && len(op.Logs.Messages("The object is not yet as this operator last wrote it")) == 0 {
				t.Error("no stale read was waited for; the stale client did not do its job")
			}
		})
	}
}

// When the cache never shows the operator's write, processing goes on
// after the consistency timeout, and says so.
func TestConsistencyTimeout(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	reg, kind := kex()
	var seen calls
	handlers.OnCreate(kind, "create_a", seen.record)
	handlers.OnCreate(kind, "create_b", seen.record)
	f := &faults{inflate: true}
	op := env.StartOperator(t, ns, reg, handlers.Options{ConsistencyTimeout: 500 * time.Millisecond, WrapClient: f.wrap})
	create(t, exampleObject(t, ns))
	eventually(t, "creation is handled", func() bool { return op.Logs.Count("Creation is processed: 2 succeeded; 0 failed.") == 1 })
	if len(op.Logs.Messages("The cache did not catch up with this operator's last write in time")) == 0 {
		t.Error("the timeout was not logged")
	}
	if a, b := len(seen.of("create_a")), len(seen.of("create_b")); a != 1 || b != 1 {
		t.Errorf("calls: create_a %d, create_b %d; want 1 each", a, b)
	}
}

// Many quick updates: every handled state is a real one, the last state
// is handled, and no handler runs twice for the same state.
func TestRapidUpdatesLoseNothing(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	reg, kind := kex()
	var seen calls
	handlers.OnCreate(kind, "create_fn", nothing)
	handlers.OnUpdate(kind, "update_fn", seen.record)
	op := env.StartOperator(t, ns, reg, handlers.Options{})
	create(t, exampleObject(t, ns))
	eventually(t, "creation is handled", func() bool { return op.Logs.Count("Creation is processed: 1 succeeded; 0 failed.") == 1 })

	values := []string{"v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10"}
	for _, v := range values {
		mergePatch(t, ns, "kopf-example-1", `{"spec":{"field":"`+v+`"}}`, false)
	}
	eventually(t, "the last value is handled", func() bool {
		all := seen.of("update_fn")
		return len(all) > 0 && specField(all[len(all)-1].New) == "v10"
	})
	handledValues := map[string]int{}
	previous := "value"
	for _, c := range seen.of("update_fn") {
		newValue, oldValue := specField(c.New), specField(c.Old)
		handledValues[newValue]++
		if oldValue != previous {
			t.Errorf("an update started from %q, but the last handled value was %q", oldValue, previous)
		}
		previous = newValue
	}
	for v, n := range handledValues {
		if n > 1 {
			t.Errorf("the value %q was handled %d times", v, n)
		}
	}
}

func specField(essence any) string {
	m, _ := essence.(map[string]any)
	spec, _ := m["spec"].(map[string]any)
	s, _ := spec["field"].(string)
	return s
}
