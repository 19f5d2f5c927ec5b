package rounds

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kopf-go/kopf/internal/causes"
	"github.com/kopf-go/kopf/internal/execution"
	"github.com/kopf-go/kopf/internal/registry"
	"github.com/kopf-go/kopf/pkg/diff"
	"github.com/kopf-go/kopf/pkg/diffbase"
	"github.com/kopf-go/kopf/pkg/fields"
	"github.com/kopf-go/kopf/pkg/patch"
	"github.com/kopf-go/kopf/pkg/progress"
)

// handledObject is an object of the benchmarks' kind as the engine's cache
// holds it once the quick start has handled it: its finalizer, the create
// handler's result, the last handled essence, no progress left (and no
// managedFields: the cache drops them).
func handledObject(tb testing.TB, store diffbase.Storage) *unstructured.Unstructured {
	tb.Helper()
	obj := &unstructured.Unstructured{}
	if err := json.Unmarshal([]byte(`{
		"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
		"metadata": {"name": "kex-00042", "namespace": "restart", "uid": "6f1c2e0a-3b7d-4f2e-9a51-0c8d7e6b5a43",
			"resourceVersion": "123456", "generation": 1, "creationTimestamp": "2026-12-02T13:00:00Z",
			"labels": {"somelabel": "somevalue"}, "annotations": {"someannotation": "somevalue"},
			"finalizers": ["kopf.zalando.org/KopfFinalizerMarker"]},
		"spec": {"duration": "1m", "field": "value", "items": ["item1", "item2"]},
		"status": {"create_fn": {"message": "created"}}}`), &obj.Object); err != nil {
		tb.Fatal(err)
	}
	essence := store.Build(obj.Object, nil)
	p := patch.New()
	encoded := store.Store(obj.Object, p, essence)
	annotations := obj.GetAnnotations()
	annotations[diffbase.NewAnnotations().Keys.Prefix+"/"+diffbase.DefaultKey] = encoded
	obj.SetAnnotations(annotations)
	return obj
}

// quickStart is the quick start's kind: a create, an update and a delete
// handler.
func quickStart() *registry.Kind {
	none := func(context.Context, registry.Object, *causes.Cause) (any, error) { return nil, nil }
	kind := &registry.Kind{}
	for id, reason := range map[string]causes.Reason{"create_fn": causes.Create, "update_fn": causes.Update, "delete_fn": causes.Delete} {
		kind.Changing = append(kind.Changing, &registry.ChangeHandler{Handler: execution.Handler{ID: id}, Reason: reason, Fn: none,
			RequiresFinalizer: reason == causes.Delete})
	}
	return kind
}

// resumeCycle is the pure part of a fresh process's first cycle of a
// handled object, in the engine's order: the new essence and the last
// handled one, their diff, the cause, the registry's matching, the round
// of change handlers, and the comparison that decides whether the
// essence is stored again. It reports whether anything would be written.
func resumeCycle(obj *unstructured.Unstructured, kind *registry.Kind, store diffbase.Storage, records progress.Storage, env Env, now time.Time) (bool, error) {
	body := obj.Object
	essence := store.Build(body, kind.ExtraFields())
	records.Clear(essence)
	old, err := store.Fetch(body)
	if err != nil {
		return false, err
	}
	if old != nil {
		records.Clear(old)
	}
	d := diff.Compute(old, essence)
	reason, initial := causes.Detect(causes.Input{Finalized: true, HasDiffBase: old != nil, Diff: d, Initial: true})
	p := patch.New()
	subject := &registry.Subject{Obj: obj, Labels: obj.GetLabels(), Annotations: obj.GetAnnotations(), Initial: initial,
		Cause: &causes.Cause{Reason: reason, Body: body, Old: old, New: essence, Diff: d, Patch: p}}
	// The finalizer is there already: nothing to add, only to ask.
	if !kind.Prematch(subject) || !kind.RequiresFinalizer(subject) {
		return false, nil
	}
	env.Object, env.Body, env.Patch = obj, body, p
	res := Run(context.Background(), env, kind, subject, now)
	if res.Done && (old == nil || !fields.Equal(old, essence)) {
		store.Store(body, p, essence)
	}
	return !p.IsEmpty(), nil
}

func resumeEnv() Env {
	return Env{Progress: progress.NewSmart(), Clock: clocktesting.NewFakeClock(t0), Log: logr.Discard(),
		Defaults: execution.Defaults{Errors: execution.ErrorsTemporary, Backoff: time.Minute}, Ref: stringer("restart/kex-00042")}
}

// A resume cycle of a handled object writes nothing: the benchmark below
// measures a cycle that does what a restart's cycles do.
func TestResumeCycleOfHandledObjectWritesNothing(t *testing.T) {
	store := diffbase.NewAnnotations()
	obj := handledObject(t, store)
	env := resumeEnv()
	writes, err := resumeCycle(obj, quickStart(), store, env.Progress, env, t0)
	if err != nil {
		t.Fatal(err)
	}
	if writes {
		t.Error("the resume cycle of a handled object has something to write")
	}
	// The same cycle on an object whose spec changed since it was handled
	// stores the new essence: the cycle above compared for real.
	if err := unstructured.SetNestedField(obj.Object, "other", "spec", "field"); err != nil {
		t.Fatal(err)
	}
	if writes, err := resumeCycle(obj, quickStart(), store, env.Progress, env, t0); err != nil || !writes {
		t.Errorf("the cycle of a changed object writes %v (err %v), want the update's records", writes, err)
	}
}

// BenchmarkResumeCycle is one cycle of a fresh process over a handled
// object of the quick start's kind (docs/benchmarks.md, "A restart over
// handled objects").
func BenchmarkResumeCycle(b *testing.B) {
	store := diffbase.NewAnnotations()
	obj := handledObject(b, store)
	kind := quickStart()
	env := resumeEnv()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := resumeCycle(obj, kind, store, env.Progress, env, t0); err != nil {
			b.Fatal(err)
		}
	}
}
