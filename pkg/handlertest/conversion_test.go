package handlertest_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kopf-go/kopf/handlers"
	"github.com/kopf-go/kopf/pkg/handlertest"
)

// TestConvert converts through a chain (v1 -> v2 -> v3) and leaves the
// original alone; a failing converter's error is the error.
func TestConvert(t *testing.T) {
	reg := handlers.NewRegistry()
	conv := handlers.ForConversion(reg, "kopf.dev", "ConversionExample")
	handlers.Converter(conv, "v1", "v2", func(ctx context.Context, obj *unstructured.Unstructured) error {
		return unstructured.SetNestedField(obj.Object, "via v2", "spec", "value")
	})
	handlers.Converter(conv, "v2", "v3", func(ctx context.Context, obj *unstructured.Unstructured) error {
		if obj.GetName() == "bad" {
			return errors.New("refused")
		}
		return nil
	})
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kopf.dev/v1", "kind": "ConversionExample", "metadata": map[string]any{"name": "good"},
	}}
	out, err := handlertest.Convert(reg, obj, "v3")
	if err != nil {
		t.Fatal(err)
	}
	if out.GetAPIVersion() != "kopf.dev/v3" || out.Object["spec"].(map[string]any)["value"] != "via v2" {
		t.Errorf("converted to %v", out.Object)
	}
	if obj.GetAPIVersion() != "kopf.dev/v1" || obj.Object["spec"] != nil {
		t.Errorf("the original changed: %v", obj.Object)
	}
	obj.SetName("bad")
	if _, err := handlertest.Convert(reg, obj, "v3"); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Errorf("a failing converter: want its error, got %v", err)
	}
}
