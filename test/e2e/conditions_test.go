package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// readyAsKubectlWaits is the check of `kubectl wait --for=condition=Ready`:
// the Ready condition is True, and if it carries an observedGeneration,
// that is the object's generation (kubectl waits for a condition of the
// current spec, not a stale one).
func readyAsKubectlWaits(obj *unstructured.Unstructured) bool {
	ready := conditionOf(obj, "Ready")
	if ready == nil || ready["status"] != "True" {
		return false
	}
	g, found, _ := unstructured.NestedInt64(ready, "observedGeneration")
	return !found || g == obj.GetGeneration()
}

// conditionOf is the object's condition of the type; nil if none.
func conditionOf(obj *unstructured.Unstructured, kind string) map[string]any {
	list, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, item := range list {
		if c, ok := item.(map[string]any); ok && c["type"] == kind {
			return c
		}
	}
	return nil
}

// TestConditionsExample runs examples/21-conditions as a process: a flaky
// object is not Ready while its handler retries, then Ready; a broken
// spec makes it Stalled and not Ready for its generation; a good spec
// again makes it Ready.
func TestConditionsExample(t *testing.T) {
	ns := env.Namespace(t)
	op := startExample(t, "21-conditions", ns)
	ctx := context.Background()
	obj := exampleObject(t, ns)
	_ = unstructured.SetNestedField(obj.Object, "flaky", "spec", "field")
	if err := env.Client.Create(ctx, obj); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(obj)
	read := func() *unstructured.Unstructured {
		t.Helper()
		got := newObject()
		if err := env.Client.Get(ctx, key, got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	op.waitFor(t, "Ready False while create_fn retries", func() bool {
		got := read()
		ready, reconciling := conditionOf(got, "Ready"), conditionOf(got, "Reconciling")
		msg, _ := ready["message"].(string)
		return ready["status"] == "False" && ready["reason"] == "Retrying" && strings.Contains(msg, "'create_fn'") &&
			reconciling["status"] == "True" && !readyAsKubectlWaits(got)
	})
	op.waitFor(t, "Ready as kubectl wait sees it", func() bool { return readyAsKubectlWaits(read()) })

	setField := func(value string) {
		t.Helper()
		p := client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"spec":{"field":%q}}`, value))
		if err := env.Client.Patch(ctx, newObjectAt(key), p); err != nil {
			t.Fatal(err)
		}
	}
	setField("broken")
	op.waitFor(t, "Stalled True for the broken generation", func() bool {
		got := read()
		stalled := conditionOf(got, "Stalled")
		g, _, _ := unstructured.NestedInt64(got.Object, "status", "observedGeneration")
		return stalled["status"] == "True" && g == got.GetGeneration()
	})
	if got := read(); readyAsKubectlWaits(got) {
		t.Errorf("Ready as kubectl wait sees it after a permanent failure: %v", got.Object["status"])
	}
	setField("value")
	op.waitFor(t, "Ready again for the good generation", func() bool {
		got := read()
		return readyAsKubectlWaits(got) && got.GetGeneration() == 3 && conditionOf(got, "Stalled")["status"] == "False"
	})
	op.waitForLine(t, "Updating is processed: 1 succeeded; 0 failed.")
	op.stop(t)
}

// newObjectAt is a KopfExample that names only the key: what a patch
// addresses.
func newObjectAt(key client.ObjectKey) *unstructured.Unstructured {
	obj := newObject()
	obj.SetNamespace(key.Namespace)
	obj.SetName(key.Name)
	return obj
}
