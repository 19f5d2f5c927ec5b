package resources

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// countingMapper counts the questions that reach it.
type countingMapper struct {
	meta.RESTMapper
	asked int
}

func (c *countingMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	c.asked++
	return c.RESTMapper.RESTMapping(gk, versions...)
}

func TestMemoMapperRemembersFoundMappings(t *testing.T) {
	gv := schema.GroupVersion{Group: "kopf.dev", Version: "v1"}
	known := meta.NewDefaultRESTMapper([]schema.GroupVersion{gv})
	known.Add(gv.WithKind("KopfExample"), meta.RESTScopeNamespace)
	inner := &countingMapper{RESTMapper: known}
	m := NewMemoMapper(inner)

	for range 3 {
		mapping, err := m.RESTMapping(schema.GroupKind{Group: "kopf.dev", Kind: "KopfExample"}, "v1")
		if err != nil {
			t.Fatal(err)
		}
		if mapping.Resource.Resource != "kopfexamples" || mapping.Scope.Name() != meta.RESTScopeNameNamespace {
			t.Fatalf("mapping = %+v", mapping)
		}
	}
	if inner.asked != 1 {
		t.Errorf("the wrapped mapper was asked %d times for one mapping, want 1", inner.asked)
	}

	// A kind not found is asked for again: its CRD may come later.
	missing := schema.GroupKind{Group: "kopf.dev", Kind: "Later"}
	for range 2 {
		if _, err := m.RESTMapping(missing, "v1"); !meta.IsNoMatchError(err) {
			t.Fatalf("err = %v, want a no-match error", err)
		}
	}
	if inner.asked != 3 {
		t.Errorf("the wrapped mapper was asked %d times, want 3 (a miss is not remembered)", inner.asked)
	}
	known.Add(gv.WithKind("Later"), meta.RESTScopeNamespace)
	if _, err := m.RESTMapping(missing, "v1"); err != nil {
		t.Errorf("a kind added later is not found: %v", err)
	}
}
