package integration

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/handlers"
	"github.com/kopf-go/kopf/pkg/cause"
)

// outcomeOf is what the conditions' handlers do with spec.field: "flaky"
// fails temporarily twice, then succeeds; "broken" fails for good;
// anything else succeeds at once.
func outcomeOf(obj *unstructured.Unstructured, c *cause.Change) (any, error) {
	field, _, _ := unstructured.NestedString(obj.Object, "spec", "field")
	switch {
	case field == "broken":
		return nil, handlers.Permanent(errors.New("the field is broken"))
	case field == "flaky" && c.Retry < 2:
		return nil, handlers.Temporary(errors.New("not yet"), 500*time.Millisecond)
	}
	return map[string]any{"field": field}, nil
}

// conditionsRun is one run of the scenario: the object created with
// spec.field "flaky", changed to "value", then to "broken".
type conditionsRun struct {
	versions *versions
	// final is the object after each step: created, changed, broken.
	final []*unstructured.Unstructured
}

func runConditionsScenario(t *testing.T, keep bool) conditionsRun {
	ns := env.Namespace(t)
	seen := recordVersions(t, ns)
	reg, kind := kex()
	if keep {
		handlers.Conditions(kind)
	}
	handlers.OnCreate(kind, "create_fn", func(ctx context.Context, obj *unstructured.Unstructured, c *cause.Change) (any, error) {
		return outcomeOf(obj, c)
	})
	handlers.OnUpdate(kind, "update_fn", func(ctx context.Context, obj *unstructured.Unstructured, c *cause.Change) (any, error) {
		return outcomeOf(obj, c)
	}, handlers.Field("spec.field"))
	op := env.StartOperator(t, ns, reg, handlers.Options{})

	obj := exampleObject(t, ns)
	_ = unstructured.SetNestedField(obj.Object, "flaky", "spec", "field")
	create(t, obj)
	run := conditionsRun{versions: seen}
	// step waits for the handling of the field's value to be written
	// (the log line comes before the write): the diff-base has it and
	// no handler's progress is left.
	step := func(message, field string) {
		t.Helper()
		eventually(t, message, func() bool { return op.Logs.Count(message) == 1 })
		eventually(t, "the handling of "+field+" is written", func() bool {
			annotations := get(t, ns, obj.GetName()).GetAnnotations()
			for key := range annotations {
				if strings.HasPrefix(key, "kopf.zalando.org/") && key != "kopf.zalando.org/last-handled-configuration" {
					return false
				}
			}
			return strings.Contains(annotations["kopf.zalando.org/last-handled-configuration"], fmt.Sprintf(`"field":%q`, field))
		})
		run.final = append(run.final, get(t, ns, obj.GetName()))
	}
	step("Creation is processed: 1 succeeded; 0 failed.", "flaky")
	setField := func(value string) {
		t.Helper()
		p := client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"spec":{"field":%q}}`, value))
		if err := env.Client.Patch(context.Background(), kexRef(ns, obj.GetName()), p); err != nil {
			t.Fatal(err)
		}
	}
	setField("value")
	step("Updating is processed: 1 succeeded; 0 failed.", "value")
	setField("broken")
	step("Updating is processed: 0 succeeded; 1 failed.", "broken")
	return run
}

// kstatusOf is what kstatus (Flux, kpt, Argo CD's generic health) makes of
// the object.
func kstatusOf(t *testing.T, obj *unstructured.Unstructured) status.Status {
	t.Helper()
	res, err := status.Compute(obj)
	if err != nil {
		t.Fatalf("kstatus of %s: %v", obj.GetResourceVersion(), err)
	}
	return res.Status
}

// condition is the status.conditions entry of the type; nil if none.
func condition(obj *unstructured.Unstructured, kind string) map[string]any {
	list, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, item := range list {
		if c, ok := item.(map[string]any); ok && c["type"] == kind {
			return c
		}
	}
	return nil
}

// observed is status.observedGeneration; -1 if none.
func observed(obj *unstructured.Unstructured) int64 {
	g, ok, _ := unstructured.NestedInt64(obj.Object, "status", "observedGeneration")
	if !ok {
		return -1
	}
	return g
}

// TestConditionsFollowTheHandlers runs the handlers through retries,
// success, a spec change and a permanent failure, and checks every
// version the API server stored: what kstatus makes of it, and that
// Kopf's own state is what a run without conditions leaves.
func TestConditionsFollowTheHandlers(t *testing.T) {
	checkLeaks(t)
	with := runConditionsScenario(t, true)
	without := runConditionsScenario(t, false)

	// After each step: Kopf's annotations and status results as without
	// conditions, and the conditions where the handlers stand.
	for i, want := range []struct {
		kstatus status.Status
		ready   string
		reason  string
	}{
		{status.CurrentStatus, "True", "Succeeded"},
		{status.CurrentStatus, "True", "Succeeded"},
		{status.FailedStatus, "False", "Failed"},
	} {
		got, plain := with.final[i], without.final[i]
		if diff := cmp.Diff(kopfState(plain), kopfState(got)); diff != "" {
			t.Errorf("step %d: Kopf's state with conditions differs from without (-without +with):\n%s", i, diff)
		}
		if s := kstatusOf(t, got); s != want.kstatus {
			t.Errorf("step %d: kstatus %s, want %s; status %v", i, s, want.kstatus, got.Object["status"])
		}
		ready := condition(got, "Ready")
		if ready == nil || ready["status"] != want.ready || ready["reason"] != want.reason {
			t.Errorf("step %d: Ready = %v, want %s/%s", i, ready, want.ready, want.reason)
		}
		if g := observed(got); g != got.GetGeneration() {
			t.Errorf("step %d: observedGeneration %d, want %d", i, g, got.GetGeneration())
		}
		for _, kind := range []string{"Ready", "Reconciling", "Stalled"} {
			if g := condition(got, kind)["observedGeneration"]; g != got.GetGeneration() {
				t.Errorf("step %d: %s's observedGeneration %v, want %d", i, kind, g, got.GetGeneration())
			}
		}
		if _, ok := plain.Object["status"].(map[string]any)["conditions"]; ok {
			t.Errorf("step %d: conditions written for a kind that does not keep them: %v", i, plain.Object["status"])
		}
	}
	if stalled := condition(with.final[2], "Stalled"); stalled["status"] != "True" || !strings.Contains(stalled["message"].(string), "'update_fn/spec.field'") {
		t.Errorf("Stalled after the permanent failure = %v, want True naming update_fn", stalled)
	}

	// While retrying: Reconciling True, Ready False naming the handler,
	// kstatus InProgress; no observedGeneration yet.
	var retrying, changed int
	last := map[string]map[string]any{}
	for _, v := range with.versions.all() {
		// A lastTransitionTime moves only with its status.
		for _, kind := range []string{"Ready", "Reconciling", "Stalled"} {
			c := condition(v, kind)
			if prev := last[kind]; c != nil && prev != nil && prev["status"] == c["status"] && prev["lastTransitionTime"] != c["lastTransitionTime"] {
				t.Errorf("%s's lastTransitionTime moved from %v to %v while it stayed %v", kind, prev["lastTransitionTime"], c["lastTransitionTime"], c["status"])
			}
			if c != nil {
				last[kind] = c
			}
		}
		ready := condition(v, "Ready")
		if ready != nil && ready["reason"] == "Retrying" {
			retrying++
			if msg, _ := ready["message"].(string); ready["status"] != "False" || !strings.Contains(msg, "'create_fn'") || !strings.Contains(msg, "not yet") {
				t.Errorf("Ready while retrying = %v, want False naming create_fn and its error", ready)
			}
			if r := condition(v, "Reconciling"); r["status"] != "True" {
				t.Errorf("Reconciling while retrying = %v, want True", r)
			}
			if s := kstatusOf(t, v); s != status.InProgressStatus {
				t.Errorf("kstatus while retrying = %s, want InProgress", s)
			}
			if g := observed(v); g != -1 {
				t.Errorf("observedGeneration %d while the creation is retried, want none", g)
			}
		}
		// A spec change not yet handled: the old observedGeneration,
		// which kstatus reads as InProgress.
		if g := observed(v); g > 0 && g < v.GetGeneration() {
			changed++
			if s := kstatusOf(t, v); s != status.InProgressStatus {
				t.Errorf("kstatus of generation %d observed at %d = %s, want InProgress", v.GetGeneration(), g, s)
			}
		}
	}
	if retrying == 0 {
		t.Errorf("no stored version says Ready False/Retrying while create_fn was retried")
	}
	if changed == 0 {
		t.Errorf("no stored version has observedGeneration behind a changed spec")
	}
}

// kopfState is what Kopf keeps on the object: its annotations and its
// status without the conditions.
func kopfState(obj *unstructured.Unstructured) map[string]any {
	st, _ := obj.Object["status"].(map[string]any)
	rest := map[string]any{}
	for k, v := range st {
		if k != "conditions" && k != "observedGeneration" {
			rest[k] = v
		}
	}
	return map[string]any{"annotations": obj.GetAnnotations(), "status": rest}
}
