// Package patch is the one JSON merge patch of a processing cycle, as
// handlers and storages see it: they set, remove and read fields, and the
// engine writes what they leave, together with its own state (progress,
// the last handled configuration, results), in one write (plus one to
// /status where that subresource exists). A cause's patch offers no way to
// empty or split the whole patch: those are the engine's, which applies it.
package patch

import (
	"encoding/json"

	"github.com/kopf-go/kopf/pkg/fields"
)

// Patch is a JSON merge patch under construction: maps merge, lists and
// scalars replace, and nil (JSON null) deletes a key. It is not safe for
// concurrent use; one cycle owns one patch.
type Patch struct {
	body map[string]any
}

// New returns an empty patch.
func New() *Patch { return &Patch{body: map[string]any{}} }

// Set stores a value at the path; maps in the value are merged into the
// object by the API server, lists and scalars replace what is there.
func (p *Patch) Set(value any, path ...string) {
	if p.body == nil {
		p.body = map[string]any{}
	}
	fields.Set(p.body, path, value)
}

// Remove deletes the field at the path from the object (sets JSON null).
func (p *Patch) Remove(path ...string) { p.Set(nil, path...) }

// Get returns what the patch holds at the path, and whether it holds
// anything; with no path, the whole patch (nil-free: an empty map when the
// patch is empty). What it returns is the patch's own: read it, change the
// patch through Set and Remove.
func (p *Patch) Get(path ...string) (any, bool) {
	if p.body == nil {
		p.body = map[string]any{}
	}
	return fields.Resolve(p.body, path)
}

// Forget takes the path out of the patch, as if it had never been set (a
// storage taking back its own write; Remove would delete the field):
// the maps it leaves empty go too, so that a record written and purged in
// one cycle leaves no {"metadata": {"annotations": {}}} to send.
func (p *Patch) Forget(path ...string) { fields.RemovePruning(p.body, path) }

// SetLabel sets a label on the object.
func (p *Patch) SetLabel(key, value string) { p.Set(value, "metadata", "labels", key) }

// RemoveLabel deletes a label from the object.
func (p *Patch) RemoveLabel(key string) { p.Remove("metadata", "labels", key) }

// SetAnnotation sets an annotation on the object.
func (p *Patch) SetAnnotation(key, value string) { p.Set(value, "metadata", "annotations", key) }

// RemoveAnnotation deletes an annotation from the object.
func (p *Patch) RemoveAnnotation(key string) { p.Remove("metadata", "annotations", key) }

// SetStatus sets a top-level key of the object's status.
func (p *Patch) SetStatus(key string, value any) { p.Set(value, "status", key) }

// MergeStatus merges a map into status.<key>: the merge patch keeps the keys
// of status.<key> that the map does not mention.
func (p *Patch) MergeStatus(key string, value map[string]any) {
	existing, _ := p.Get("status", key)
	m, ok := existing.(map[string]any)
	if !ok {
		m = map[string]any{}
		p.Set(m, "status", key)
	}
	for k, v := range value {
		m[k] = v
	}
}

// IsEmpty reports whether the patch changes nothing.
func (p *Patch) IsEmpty() bool { return len(p.body) == 0 }

// MarshalJSON renders the whole merge patch.
func (p *Patch) MarshalJSON() ([]byte, error) {
	if p.body == nil {
		return []byte("{}"), nil
	}
	return json.Marshal(p.body)
}
