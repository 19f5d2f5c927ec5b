package ring

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kopf-go/kopf/internal/sharding"
)

func TestPatchBody(t *testing.T) {
	tests := []struct {
		name string
		mv   sharding.Move
		want string
	}{
		{"an owner set directly is granted the object, and any handover request goes", sharding.Move{Owner: "m1"},
			`{"metadata":{"annotations":{"ops.shard.kopf.dev/main-granted":"m1","ops.shard.kopf.dev/main-next":null},` +
				`"labels":{"ops.shard.kopf.dev/main":"m1"},"resourceVersion":"42","uid":"u-1"}}`},
		{"a label put back to its granted member, with a handover request", sharding.Move{Owner: "m1", Next: "m2"},
			`{"metadata":{"annotations":{"ops.shard.kopf.dev/main-granted":"m1","ops.shard.kopf.dev/main-next":"m2"},` +
				`"labels":{"ops.shard.kopf.dev/main":"m1"},"resourceVersion":"42","uid":"u-1"}}`},
		{"a handover request leaves the owner label and the grant", sharding.Move{Next: "m2"},
			`{"metadata":{"annotations":{"ops.shard.kopf.dev/main-next":"m2"},"resourceVersion":"42","uid":"u-1"}}`},
		{"a handover called off", sharding.Move{ClearNext: true},
			`{"metadata":{"annotations":{"ops.shard.kopf.dev/main-next":null},"resourceVersion":"42","uid":"u-1"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := patchBody(KeysOf("ops", "main"), seen{uid: "u-1", resourceVersion: "42"}, tt.mv)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(canonical(t, tt.want), canonical(t, string(got))); diff != "" {
				t.Errorf("patchBody() -want +got:\n%s", diff)
			}
		})
	}
}

func canonical(t *testing.T, raw string) any {
	t.Helper()
	var out any
	if err := json.Unmarshal([]byte(raw), &out); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	return out
}

// Every write is guarded by the uid and the resourceVersion, and a write must write something.
func TestPatchBodyRefuses(t *testing.T) {
	if _, err := patchBody(KeysOf("ops", "main"), seen{uid: "u-1"}, sharding.Move{Owner: "m1"}); err == nil {
		t.Error("patchBody() without a resourceVersion gave a patch")
	}
	if _, err := patchBody(KeysOf("ops", "main"), seen{resourceVersion: "42"}, sharding.Move{Owner: "m1"}); err == nil {
		t.Error("patchBody() without a uid gave a patch")
	}
	if _, err := patchBody(KeysOf("ops", "main"), seen{uid: "u-1", resourceVersion: "42"}, sharding.Move{}); err == nil {
		t.Error("patchBody() of an empty move gave a patch")
	}
}

func k(name string) key {
	return key{NamespacedName: types.NamespacedName{Namespace: "ns", Name: name}}
}

// A change of members settles once every object it queued is placed, and
// counts the owners set and the handovers requested on the way.
func TestTallySettles(t *testing.T) {
	var tl tally
	if _, ok := tl.open(1, []key{k("a"), k("b"), k("c")}); ok {
		t.Fatal("settled before any object was placed")
	}
	steps := []struct {
		round int
		key   key
		mv    sharding.Move
		wrote bool
	}{
		{1, k("a"), sharding.Move{Owner: "m1"}, true},
		{1, k("b"), sharding.Move{Next: "m2"}, true},
		{1, k("x"), sharding.Move{Owner: "m1"}, true},  // not queued by the change
		{1, k("b"), sharding.Move{Next: "m2"}, true},   // placed already
		{1, k("c"), sharding.Move{Owner: "m1"}, false}, // no write: not counted
	}
	var got summary
	settled := false
	for i, s := range steps {
		sum, ok := tl.done(s.round, s.key, s.mv, s.wrote)
		if ok && i != len(steps)-1 {
			t.Fatalf("settled at step %d of %d", i+1, len(steps))
		}
		got, settled = sum, ok
	}
	if !settled {
		t.Fatal("not settled after every object was placed")
	}
	if diff := cmp.Diff(summary{objects: 3, owned: 1, asked: 1}, got, cmp.AllowUnexported(summary{})); diff != "" {
		t.Errorf("summary -want +got:\n%s", diff)
	}
}

// A change that comes while the previous one's objects are being placed
// takes their place: placements with the previous members do not count,
// the writes counted so far do, and the ring settles once.
func TestTallyJoinsChanges(t *testing.T) {
	var tl tally
	tl.open(1, []key{k("a"), k("b")})
	tl.done(1, k("a"), sharding.Move{Owner: "m1"}, true)
	if _, ok := tl.open(2, []key{k("a"), k("b")}); ok {
		t.Fatal("settled at the second change")
	}
	if _, ok := tl.done(1, k("b"), sharding.Move{Owner: "m1"}, true); ok {
		t.Fatal("settled by a placement among the previous members")
	}
	tl.done(2, k("a"), sharding.Move{Next: "m2"}, true)
	got, ok := tl.done(2, k("b"), sharding.Move{}, false)
	if !ok {
		t.Fatal("not settled")
	}
	if diff := cmp.Diff(summary{objects: 2, owned: 1, asked: 1}, got, cmp.AllowUnexported(summary{})); diff != "" {
		t.Errorf("summary -want +got:\n%s", diff)
	}
}

// A change with no objects settles at once.
func TestTallyWithoutObjects(t *testing.T) {
	var tl tally
	if got, ok := tl.open(1, nil); !ok || got != (summary{}) {
		t.Errorf("open() without objects = %+v, %v; want settled with nothing", got, ok)
	}
}
