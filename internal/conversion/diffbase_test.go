package conversion

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kopf-go/kopf/pkg/diff"
	"github.com/kopf-go/kopf/pkg/diffbase"
	"github.com/kopf-go/kopf/pkg/patch"
)

const (
	lastHandled = "kopf.zalando.org/last-handled-configuration"
	lastVersion = "kopf.zalando.org/last-handled-version"
)

// twoVersions converts spec.field (v1) and spec.value (v2) both ways.
func twoVersions() *Registry {
	return &Registry{Kinds: []*Kind{{GroupKind: exampleKind, Converters: []*Converter{
		{From: "v1", To: "v2", Fn: rename("field", "value")},
		{From: "v2", To: "v1", Fn: rename("value", "field")},
	}}}}
}

// bodyOf is an object as read in a version, with annotations.
func bodyOf(version string, spec map[string]any, annotations map[string]any) map[string]any {
	o := object("kopf.dev/"+version, spec).Object
	if annotations != nil {
		o["metadata"].(map[string]any)["annotations"] = annotations
	}
	return o
}

func TestDiffBaseStoresTheVersionBesideKopfsEssence(t *testing.T) {
	d := NewDiffBase(nil, twoVersions())
	body := bodyOf("v1", map[string]any{"field": "hello"}, nil)
	p := patch.New()
	encoded := d.Store(body, p, d.Build(body, nil))
	if want := `{"spec":{"field":"hello"}}` + "\n"; encoded != want {
		t.Errorf("stored essence = %q, want Kopf's %q", encoded, want)
	}
	raw, _ := p.Get("metadata", "annotations")
	annotations, _ := raw.(map[string]any)
	if diff := cmp.Diff(map[string]any{lastHandled: encoded, lastVersion: "v1"}, annotations); diff != "" {
		t.Errorf("annotations -want +got:\n%s", diff)
	}

	other := object("other.dev/v1", map[string]any{"field": "hello"}).Object
	p = patch.New()
	d.Store(other, p, d.Build(other, nil))
	raw, _ = p.Get("metadata", "annotations")
	annotations, _ = raw.(map[string]any)
	if _, ok := annotations[lastVersion]; ok {
		t.Errorf("a kind without converters got the version annotation: %v", annotations)
	}
}

func TestDiffBaseAcrossVersions(t *testing.T) {
	recordedV1 := `{"spec":{"field":"hello"}}` + "\n"
	for _, tc := range []struct {
		name        string
		reg         *Registry
		body        map[string]any
		wantChanged bool
	}{{
		name: "recorded in v1, read in v2",
		reg:  twoVersions(),
		body: bodyOf("v2", map[string]any{"value": "hello"}, map[string]any{lastHandled: recordedV1, lastVersion: "v1"}),
	}, {
		name:        "recorded in v1, read in v2, changed",
		reg:         twoVersions(),
		body:        bodyOf("v2", map[string]any{"value": "changed"}, map[string]any{lastHandled: recordedV1, lastVersion: "v1"}),
		wantChanged: true,
	}, {
		name: "unrecorded version, unchanged in another version",
		reg:  twoVersions(),
		body: bodyOf("v2", map[string]any{"value": "hello"}, map[string]any{lastHandled: recordedV1}),
	}, {
		name: "unrecorded version, declared",
		reg: func() *Registry {
			r := twoVersions()
			r.Kinds[0].UnrecordedVersion = "v1"
			return r
		}(),
		body:        bodyOf("v2", map[string]any{"value": "changed"}, map[string]any{lastHandled: recordedV1}),
		wantChanged: true,
	}, {
		name: "recorded in the version it is read in",
		reg:  twoVersions(),
		body: bodyOf("v1", map[string]any{"field": "hello"}, map[string]any{lastHandled: recordedV1, lastVersion: "v1"}),
	}} {
		t.Run(tc.name, func(t *testing.T) {
			d := NewDiffBase(diffbase.NewAnnotations(), tc.reg)
			old, err := d.Fetch(tc.body)
			if err != nil {
				t.Fatal(err)
			}
			changes := diff.Compute(old, d.Build(tc.body, nil))
			if (len(changes) > 0) != tc.wantChanged {
				t.Errorf("diff = %v, want changed: %v", changes, tc.wantChanged)
			}
			if tc.wantChanged {
				want := diff.Diff{{Op: diff.Change, Field: []string{"spec", "value"}, Old: "hello", New: "changed"}}
				if d := cmp.Diff(want, changes); d != "" {
					t.Errorf("diff -want +got:\n%s", d)
				}
			}
		})
	}
}

func TestDiffBaseWithoutAPathFails(t *testing.T) {
	reg := &Registry{Kinds: []*Kind{{GroupKind: exampleKind, Converters: []*Converter{{From: "v1", To: "v2", Fn: rename("field", "value")}}}}}
	body := bodyOf("v1", map[string]any{"field": "x"}, map[string]any{lastHandled: `{"spec":{"value":"x"}}` + "\n", lastVersion: "v2"})
	if _, err := NewDiffBase(nil, reg).Fetch(body); err == nil {
		t.Error("Fetch() of an essence that no chain converts = nil error")
	}
}
