package conversion

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/kopf-go/kopf/pkg/diff"
	"github.com/kopf-go/kopf/pkg/diffbase"
	"github.com/kopf-go/kopf/pkg/fields"
	"github.com/kopf-go/kopf/pkg/keys"
	"github.com/kopf-go/kopf/pkg/patch"
)

// VersionKey is the annotation, under the diff-base storage's prefix
// (kopf.zalando.org/last-handled-version by default), that records the
// version the last handled essence was recorded in. The essence itself
// stays as Kopf writes it, with no apiVersion (an essence with one would
// be a change to Kopf); the annotation is written only for kinds with
// converters, and, being under Kopf's prefix, it is never part of an
// essence, neither Kopf's nor kopf-go's.
const VersionKey = "last-handled-version"

// DiffBase is a diff-base storage that keeps the last handled essences of
// the kinds with converters comparable across versions: it records the
// version an essence was handled in, and when an object is read in
// another version (the operator was upgraded to handle v2, say), it
// converts the recorded essence through the converters before the cycle
// diffs it, so that no handler runs because only the version changed.
// Kinds without converters pass through untouched.
type DiffBase struct {
	diffbase.Storage
	Registry *Registry
	// Keys forms the version annotation's keys: the storage's own
	// convention if it is an annotations storage, else Kopf's default.
	Keys keys.Convention
}

// NewDiffBase wraps a diff-base storage (nil: Kopf's default) for the
// registry's kinds.
func NewDiffBase(inner diffbase.Storage, reg *Registry) *DiffBase {
	if inner == nil {
		inner = diffbase.NewAnnotations()
	}
	d := &DiffBase{Storage: inner, Registry: reg, Keys: keys.Convention{Prefix: keys.DefaultPrefix, V1: true}}
	if a, ok := inner.(*diffbase.Annotations); ok {
		d.Keys = a.Keys
	}
	return d
}

// kindOf returns the body's converters and version; nil if it has none.
func (d *DiffBase) kindOf(body map[string]any) (*Kind, string) {
	apiVersion, _ := body["apiVersion"].(string)
	kind, _ := body["kind"].(string)
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, ""
	}
	return d.Registry.Kind(schema.GroupKind{Group: gv.Group, Kind: kind}), gv.Version
}

// Build is the storage's essence without the version annotation.
func (d *DiffBase) Build(body map[string]any, extra []fields.Path) map[string]any {
	essence := d.Storage.Build(body, extra)
	if k, _ := d.kindOf(body); k != nil {
		if m, ok := fields.Resolve(essence, fields.Path{"metadata", "annotations"}); ok {
			if annotations, ok := m.(map[string]any); ok {
				for _, key := range d.Keys.Keys(VersionKey, body) {
					delete(annotations, key)
				}
			}
			fields.PruneEmptyStanzas(essence)
		}
	}
	return essence
}

// Fetch returns the last handled essence in the object's version.
func (d *DiffBase) Fetch(body map[string]any) (map[string]any, error) {
	essence, err := d.Storage.Fetch(body)
	k, current := d.kindOf(body)
	if err != nil || essence == nil || k == nil {
		return essence, err
	}
	recorded := d.recorded(body)
	if recorded == "" {
		recorded = k.UnrecordedVersion
	}
	if recorded == "" {
		return d.guess(k, body, essence, current), nil
	}
	if recorded == current {
		return essence, nil
	}
	converted, err := convertEssence(k, body, essence, recorded, current)
	if err != nil {
		return nil, fmt.Errorf("read the last handled configuration, recorded in %s: %w", recorded, err)
	}
	return converted, nil
}

// recorded is the version in the version annotation, "" if none.
func (d *DiffBase) recorded(body map[string]any) string {
	for _, key := range d.Keys.Keys(VersionKey, body) {
		if v, ok := fields.Resolve(body, fields.Path{"metadata", "annotations", key}); ok {
			if s, ok := v.(string); ok && s != "" {
				return s
			}
		}
	}
	return ""
}

// guess finds the version of an essence recorded without one: if it is,
// converted from some version of the kind, the object's essence now (but
// for status, which only extra fields put there), the object has not
// changed since, whatever version it was handled in; else the essence is
// taken as recorded in the object's version, as without converters.
func (d *DiffBase) guess(k *Kind, body, essence map[string]any, current string) map[string]any {
	now := d.Storage.Build(body, nil)
	if same(essence, now) {
		return essence
	}
	for _, v := range k.Versions() {
		if v == current {
			continue
		}
		converted, err := convertEssence(k, body, essence, v, current)
		if err == nil && same(converted, now) {
			return converted
		}
	}
	return essence
}

// same compares two essences, but for their status.
func same(a, b map[string]any) bool {
	for _, d := range diff.Compute(a, b) {
		if len(d.Field) == 0 || d.Field[0] != "status" {
			return false
		}
	}
	return true
}

// Store stores the essence and, for kinds with converters, the version it
// is recorded in.
func (d *DiffBase) Store(body map[string]any, p *patch.Patch, essence map[string]any) string {
	encoded := d.Storage.Store(body, p, essence)
	if k, current := d.kindOf(body); k != nil {
		for _, key := range d.Keys.Keys(VersionKey, body) {
			p.SetAnnotation(key, current)
		}
		d.Keys.StoreMarker(body, p)
	}
	return encoded
}

// Forget takes the essence and its version back out of the patch.
func (d *DiffBase) Forget(body map[string]any, p *patch.Patch) {
	d.Storage.Forget(body, p)
	if k, _ := d.kindOf(body); k != nil {
		for _, key := range d.Keys.Keys(VersionKey, body) {
			p.Forget("metadata", "annotations", key)
		}
	}
}

// convertEssence converts an essence between versions, as an object of
// the kind with the body's name and namespace (for the converters' logs
// and errors), through the API machinery's JSON, so that the converters
// get the numbers as they get them from the API server (int64 for whole
// numbers). What the converters leave besides apiVersion, kind, name and
// namespace is the converted essence.
func convertEssence(k *Kind, body, essence map[string]any, from, to string) (map[string]any, error) {
	data, err := json.Marshal(essence)
	if err != nil {
		return nil, fmt.Errorf("encode the essence: %w", err)
	}
	var copied map[string]any
	if err := utiljson.Unmarshal(data, &copied); err != nil {
		return nil, fmt.Errorf("decode the essence: %w", err)
	}
	obj := &unstructured.Unstructured{Object: copied}
	obj.SetAPIVersion(schema.GroupVersion{Group: k.GroupKind.Group, Version: from}.String())
	obj.SetKind(k.GroupKind.Kind)
	meta, _ := body["metadata"].(map[string]any)
	for _, f := range []string{"name", "namespace"} {
		if v, ok := meta[f].(string); ok && v != "" {
			_ = unstructured.SetNestedField(obj.Object, v, "metadata", f)
		}
	}
	if err := k.Convert(context.Background(), obj, to); err != nil {
		return nil, err
	}
	out := obj.Object
	delete(out, "apiVersion")
	delete(out, "kind")
	if m, ok := out["metadata"].(map[string]any); ok {
		delete(m, "name")
		delete(m, "namespace")
	}
	fields.PruneEmptyStanzas(out)
	return out, nil
}
