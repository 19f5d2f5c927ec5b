package ring

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kopf-go/kopf/internal/sharding"
)

func TestPatchBody(t *testing.T) {
	const fin = "kopf.zalando.org/KopfFinalizerMarker"
	placed := `"annotations":{"ops.shard.kopf.dev/main-granted":"m1","ops.shard.kopf.dev/main-next":null},` +
		`"labels":{"ops.shard.kopf.dev/main":"m1","ops.shard.kopf.dev/main-bucket":"17"},"resourceVersion":"42","uid":"u-1"`
	tests := []struct {
		name      string
		seen      seen
		finalizer string
		want      string
	}{
		{"an owner set directly is granted the object, and any handover request goes", seen{}, "",
			`{"metadata":{` + placed + `}}`},
		{"the finalizer of a kind whose names the ring keeps is added after the others", seen{finalizers: []string{"other/one"}}, fin,
			`{"metadata":{` + placed + `,"finalizers":["other/one","` + fin + `"]}}`},
		{"an object that has the finalizer gets no list", seen{finalizers: []string{fin}}, fin,
			`{"metadata":{` + placed + `}}`},
		{"an object being deleted admits no new finalizer", seen{deleting: true}, fin,
			`{"metadata":{` + placed + `}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.seen
			s.uid, s.resourceVersion, s.bucket = "u-1", "42", "17"
			got, err := patchBody(KeysOf("ops", "main"), s, sharding.Move{Owner: "m1"}, tt.finalizer)
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
	if _, err := patchBody(KeysOf("ops", "main"), seen{uid: "u-1"}, sharding.Move{Owner: "m1"}, ""); err == nil {
		t.Error("patchBody() without a resourceVersion gave a patch")
	}
	if _, err := patchBody(KeysOf("ops", "main"), seen{resourceVersion: "42"}, sharding.Move{Owner: "m1"}, ""); err == nil {
		t.Error("patchBody() without a uid gave a patch")
	}
	if _, err := patchBody(KeysOf("ops", "main"), seen{uid: "u-1", resourceVersion: "42"}, sharding.Move{}, ""); err == nil {
		t.Error("patchBody() of an empty move gave a patch")
	}
}

func k(name string) key {
	return key{NamespacedName: types.NamespacedName{Namespace: "ns", Name: name}}
}

// A change of members settles once every source has listed and every
// object listed is placed, and counts the owners set on the way.
func TestTallySettles(t *testing.T) {
	var tl tally
	if _, ok := tl.open(1, 2); ok {
		t.Fatal("settled before any source listed")
	}
	if _, ok := tl.list(1, "0/a", []key{k("a"), k("b")}); ok {
		t.Fatal("settled before the second source listed")
	}
	steps := []struct {
		round int
		key   key
		mv    sharding.Move
		wrote bool
	}{
		{1, k("a"), sharding.Move{Owner: "m1"}, true},
		{1, k("x"), sharding.Move{Owner: "m1"}, true}, // not listed by the change
		{1, k("a"), sharding.Move{Owner: "m1"}, true}, // placed already
	}
	for i, s := range steps {
		if _, ok := tl.done(s.round, s.key, s.mv, s.wrote); ok {
			t.Fatalf("settled at step %d", i+1)
		}
	}
	if _, ok := tl.list(1, "0/a", []key{k("z")}); ok {
		t.Fatal("a source's second listing counted")
	}
	if _, ok := tl.list(1, "0/b", []key{k("c")}); ok {
		t.Fatal("settled with objects pending")
	}
	tl.done(1, k("b"), sharding.Move{Owner: "m2"}, true)
	got, ok := tl.done(1, k("c"), sharding.Move{Owner: "m1"}, false) // no write: not counted
	if !ok {
		t.Fatal("not settled after every object was placed")
	}
	if diff := cmp.Diff(summary{objects: 3, owned: 2}, got, cmp.AllowUnexported(summary{})); diff != "" {
		t.Errorf("summary -want +got:\n%s", diff)
	}
	if _, ok := tl.list(1, "0/b", []key{k("d")}); ok {
		t.Error("a settled round settled again")
	}
}

// A change that comes while the previous one's objects are being placed
// takes their place: placements with the previous members do not count,
// the writes counted so far do, and the ring settles once.
func TestTallyJoinsChanges(t *testing.T) {
	var tl tally
	tl.open(1, 1)
	tl.list(1, "0", []key{k("a"), k("b")})
	tl.done(1, k("a"), sharding.Move{Owner: "m1"}, true)
	if _, ok := tl.open(2, 1); ok {
		t.Fatal("settled at the second change")
	}
	if _, ok := tl.list(1, "0", []key{k("c")}); ok {
		t.Fatal("settled by a listing of the previous members")
	}
	tl.list(2, "0", []key{k("b")})
	if _, ok := tl.done(1, k("b"), sharding.Move{Owner: "m1"}, true); ok {
		t.Fatal("settled by a placement among the previous members")
	}
	got, ok := tl.done(2, k("b"), sharding.Move{Owner: "m2"}, true)
	if !ok {
		t.Fatal("not settled")
	}
	if diff := cmp.Diff(summary{objects: 1, owned: 2}, got, cmp.AllowUnexported(summary{})); diff != "" {
		t.Errorf("summary -want +got:\n%s", diff)
	}
}

// A change with no sources, or whose sources list nothing, settles at once.
func TestTallyWithoutObjects(t *testing.T) {
	var tl tally
	if got, ok := tl.open(1, 0); !ok || got != (summary{}) {
		t.Errorf("open() without sources = %+v, %v; want settled with nothing", got, ok)
	}
	tl.open(2, 1)
	if got, ok := tl.list(2, "0", nil); !ok || got != (summary{}) {
		t.Errorf("list() of nothing = %+v, %v; want settled with nothing", got, ok)
	}
}
