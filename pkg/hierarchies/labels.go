package hierarchies

import (
	"fmt"
	"maps"
	"reflect"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kopf-go/kopf/pkg/fields"
)

// Label puts labels on child, as Kopf's label: a label the child already
// has keeps its value unless Forced. Nested("spec.template", ...) also
// labels the metadata of those nested templates, where they exist.
//
// Unstructured children are changed in their maps. Typed children get
// their own labels through metav1.Object; for nested templates they are
// converted to the unstructured form and back, which normalises what the
// API server would normalise too (quantities, timestamps to the second).
func Label(child Object, labels map[string]string, opts ...LabelOption) error {
	return label(child, labels, newConfig(opts))
}

// label is Label with the options applied, shared with Adopt.
func label(child Object, labels map[string]string, c *config) error {
	if len(labels) == 0 {
		return nil
	}
	if own, changed := merged(child.GetLabels(), labels, c.forced); changed {
		child.SetLabels(own)
	}
	if len(c.nested) == 0 {
		return nil
	}
	if u, ok := child.(runtime.Unstructured); ok {
		content := u.UnstructuredContent()
		if labelNested(content, labels, c) {
			u.SetUnstructuredContent(content)
		}
		return nil
	}
	return labelNestedTyped(child, labels, c)
}

// merged returns own with labels added (or overwriting, if forced), and
// whether anything changed. own itself is not modified: typed objects hand
// out their live map, which a shallow copy may share.
func merged(own, labels map[string]string, forced bool) (map[string]string, bool) {
	out := maps.Clone(own)
	if out == nil {
		out = map[string]string{}
	}
	changed := false
	for k, v := range labels {
		if old, ok := out[k]; ok && (old == v || !forced) {
			continue
		}
		out[k] = v
		changed = true
	}
	return out, changed
}

// labelNested labels the nested templates in a JSON-like body and reports
// whether it changed anything. A template whose metadata or labels are not
// maps (null, say) gets fresh ones; Kopf fails on such templates.
func labelNested(body map[string]any, labels map[string]string, c *config) bool {
	changed := false
	for _, path := range c.nested {
		value, ok := fields.Resolve(body, path)
		template, isMap := value.(map[string]any)
		if !ok || !isMap {
			continue
		}
		meta, ok := template["metadata"].(map[string]any)
		if !ok {
			meta = map[string]any{}
			template["metadata"] = meta
			changed = true
		}
		own, ok := meta["labels"].(map[string]any)
		if !ok {
			own = map[string]any{}
			meta["labels"] = own
			changed = true
		}
		for k, v := range labels {
			old, exists := own[k]
			if exists && (old == v || !c.forced) {
				continue
			}
			own[k] = v
			changed = true
		}
	}
	return changed
}

// labelNestedTyped labels the nested templates of a typed object through
// its unstructured form, and writes the result back into the object if
// that changed anything.
func labelNestedTyped(child Object, labels map[string]string, c *config) error {
	body, err := runtime.DefaultUnstructuredConverter.ToUnstructured(child)
	if err != nil {
		return fmt.Errorf("label the nested templates of %T %s: %w", child, displayName(child), err)
	}
	if !labelNested(body, labels, c) {
		return nil
	}
	ptr := reflect.ValueOf(child)
	if ptr.Kind() != reflect.Pointer || ptr.IsNil() || ptr.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("label the nested templates of %T: typed objects must be pointers to structs", child)
	}
	// A fresh value, so that nothing of the old one survives the decoding.
	fresh := reflect.New(ptr.Elem().Type())
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(body, fresh.Interface()); err != nil {
		return fmt.Errorf("label the nested templates of %T %s: %w", child, displayName(child), err)
	}
	ptr.Elem().Set(fresh.Elem())
	return nil
}
