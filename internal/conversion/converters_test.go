package conversion

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kopf-go/kopf/internal/contain"
)

var exampleKind = schema.GroupKind{Group: "kopf.dev", Kind: "ConversionExample"}

// rename moves spec.<from> to spec.<to>.
func rename(from, to string) Func {
	return func(_ context.Context, obj *unstructured.Unstructured) error {
		v, ok, _ := unstructured.NestedFieldCopy(obj.Object, "spec", from)
		if !ok {
			return nil
		}
		unstructured.RemoveNestedField(obj.Object, "spec", from)
		return unstructured.SetNestedField(obj.Object, v, "spec", to)
	}
}

// hubAndSpoke converts v1 and v3 through a hub: v1->hub, hub->v1,
// v3->hub, hub->v3, and has a direct v1->v2.
func hubAndSpoke() *Kind {
	return &Kind{GroupKind: exampleKind, Converters: []*Converter{
		{From: "v1", To: "hub", Fn: rename("field", "hub")},
		{From: "hub", To: "v1", Fn: rename("hub", "field")},
		{From: "v3", To: "hub", Fn: rename("three", "hub")},
		{From: "hub", To: "v3", Fn: rename("hub", "three")},
		{From: "v1", To: "v2", Fn: rename("field", "value")},
	}}
}

func names(path []*Converter) []string {
	out := []string{}
	for _, c := range path {
		out = append(out, c.Name())
	}
	return out
}

func TestPath(t *testing.T) {
	k := hubAndSpoke()
	for _, tc := range []struct {
		from, to string
		want     []string
	}{
		{"v1", "v1", []string{}},
		{"v1", "v2", []string{"v1->v2"}},
		{"v1", "v3", []string{"v1->hub", "hub->v3"}},
		{"v3", "v1", []string{"v3->hub", "hub->v1"}},
		{"v3", "v2", []string{"v3->hub", "hub->v1", "v1->v2"}},
	} {
		path, err := k.Path(tc.from, tc.to)
		if err != nil {
			t.Fatalf("Path(%s, %s): %v", tc.from, tc.to, err)
		}
		if diff := cmp.Diff(tc.want, names(path)); diff != "" {
			t.Errorf("Path(%s, %s) -want +got:\n%s", tc.from, tc.to, diff)
		}
	}
}

func TestNoPath(t *testing.T) {
	_, err := hubAndSpoke().Path("v2", "v1")
	var np *NoPathError
	if !errors.As(err, &np) || np.From != "v2" || np.To != "v1" {
		t.Fatalf("Path(v2, v1) = %v, want a NoPathError", err)
	}
	if want := "no converter or chain of converters of ConversionExample.kopf.dev converts v2 to v1"; err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
}

func object(apiVersion string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": apiVersion, "kind": "ConversionExample",
		"metadata": map[string]any{"name": "one", "namespace": "ns"},
		"spec":     spec,
	}}
}

func TestConvertChain(t *testing.T) {
	obj := object("kopf.dev/v1", map[string]any{"field": "hello"})
	if err := hubAndSpoke().Convert(context.Background(), obj, "v3"); err != nil {
		t.Fatal(err)
	}
	want := object("kopf.dev/v3", map[string]any{"three": "hello"})
	if diff := cmp.Diff(want.Object, obj.Object); diff != "" {
		t.Errorf("converted -want +got:\n%s", diff)
	}
}

func TestConvertFailures(t *testing.T) {
	failing := &Kind{GroupKind: exampleKind, Converters: []*Converter{
		{From: "v1", To: "v2", Fn: func(context.Context, *unstructured.Unstructured) error { return errors.New("no such field") }},
		{From: "v2", To: "v1", Fn: func(context.Context, *unstructured.Unstructured) error { panic("boom") }},
	}}
	ctx := context.Background()

	err := failing.Convert(ctx, object("kopf.dev/v1", nil), "v2")
	var ce *Error
	if !errors.As(err, &ce) || ce.Panic() != nil {
		t.Fatalf("failed converter: %v, want an Error without a panic", err)
	}
	if want := "convert ConversionExample.kopf.dev ns/one from v1 to v2: converter v1->v2 failed: no such field"; err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}

	err = failing.Convert(ctx, object("kopf.dev/v2", nil), "v1")
	if !errors.As(err, &ce) || ce.Panic() == nil {
		t.Fatalf("panicking converter: %v, want an Error with the panic", err)
	}
	var p *contain.Panic
	if !errors.As(err, &p) || p.Value != "boom" || !strings.Contains(string(p.Stack), "converters_test.go") {
		t.Errorf("panic = %+v, want boom with the converter's stack", p)
	}
	if want := "convert ConversionExample.kopf.dev ns/one from v2 to v1: converter v2->v1 failed: panic: boom"; err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}

	err = failing.Convert(ctx, object("other.dev/v1", nil), "v2")
	if err == nil || !strings.Contains(err.Error(), "not of this kind") {
		t.Errorf("another group: %v, want a refusal", err)
	}
}

func TestValidate(t *testing.T) {
	fn := rename("a", "b")
	r := &Registry{Kinds: []*Kind{{GroupKind: exampleKind, Converters: []*Converter{
		{From: "v1", To: "v2", Fn: fn},
		{From: "v1", To: "v2", Fn: fn},
		{From: "v1", To: "v1", Fn: fn},
		{From: "", To: "v2", Fn: fn},
		{From: "v2", To: "v1"},
	}}}}
	err := r.Validate()
	if err == nil {
		t.Fatal("Validate() = nil, want the problems")
	}
	for _, want := range []string{
		`converter "v1->v2" of ConversionExample.kopf.dev is registered twice`,
		`converter "v1->v1" of ConversionExample.kopf.dev converts a version to itself`,
		`converter "->v2" of ConversionExample.kopf.dev: both versions are required`,
		`converter "v2->v1" of ConversionExample.kopf.dev has no function`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v\nlacks %q", err, want)
		}
	}
	if err := (&Registry{Kinds: []*Kind{hubAndSpoke()}}).Validate(); err != nil {
		t.Errorf("Validate() of a good registry = %v", err)
	}
}
