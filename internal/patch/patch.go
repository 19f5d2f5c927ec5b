// Package patch accumulates the changes of one processing cycle (framework
// state, handler results and the handlers' own changes) into one JSON merge
// patch, so that a cycle costs one write (plus one to /status where that
// subresource exists).
package patch

import (
	"encoding/json"
	"fmt"

	"github.com/kopf-go/kopf/internal/fields"
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

// Get returns what the patch holds at the path, and whether it holds anything.
func (p *Patch) Get(path ...string) (any, bool) { return fields.Resolve(p.body, path) }

// Forget takes the path out of the patch, as if it had never been set:
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

// Split returns the merge patch for the main resource (without status) and
// the one for the status subresource (a {"status": ...} map), either of
// them nil when empty. Without a status subresource, use Body.
func (p *Patch) Split() (main, status map[string]any) {
	for k, v := range p.body {
		if k == "status" {
			status = map[string]any{"status": v}
			continue
		}
		if main == nil {
			main = map[string]any{}
		}
		main[k] = v
	}
	return main, status
}

// Body returns the whole merge patch, status included; nil when empty.
func (p *Patch) Body() map[string]any {
	if len(p.body) == 0 {
		return nil
	}
	return p.body
}

// MarshalJSON renders the whole merge patch.
func (p *Patch) MarshalJSON() ([]byte, error) {
	if p.body == nil {
		return []byte("{}"), nil
	}
	return json.Marshal(p.body)
}

// Clear empties the patch, e.g. after it was applied.
func (p *Patch) Clear() { p.body = map[string]any{} }

// SetResult puts a handler's result into status.<id>: a map is merged into
// what is there, anything else replaces it. Results that do not encode as
// JSON are refused.
func (p *Patch) SetResult(id string, result any) error {
	value, err := fields.Normalize(result)
	if err != nil {
		return fmt.Errorf("store the result of %s: %w", id, err)
	}
	if m, ok := value.(map[string]any); ok {
		p.MergeStatus(id, m)
		return nil
	}
	p.SetStatus(id, value)
	return nil
}
