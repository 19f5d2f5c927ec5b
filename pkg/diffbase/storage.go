package diffbase

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/kopf-go/kopf/pkg/fields"
	"github.com/kopf-go/kopf/pkg/keys"
	"github.com/kopf-go/kopf/pkg/patch"
)

// Storage keeps the last handled essence on the object.
//
// The body that each method gets is read-only: it may be the object as
// the operator's cache holds it (the cycle reads it without a copy), so a
// storage must not modify it, nor keep it, nor return any part of it
// (Build's essence shares nothing with it). Changes go into the patch.
type Storage interface {
	// Build returns the object's current essence, without the storage's
	// own fields.
	Build(body map[string]any, extra []fields.Path) map[string]any
	// Fetch returns the stored essence, nil when there is none, and an
	// error when something is stored but is not an essence.
	Fetch(body map[string]any) (map[string]any, error)
	// Store adds the essence to the patch and returns the encoded form that
	// goes on the object, for size checks.
	Store(body map[string]any, p *patch.Patch, essence map[string]any) string
	// Forget takes a stored essence back out of the patch.
	Forget(body map[string]any, p *patch.Patch)
}

// DefaultKey is the annotation name of Kopf's last handled configuration.
const DefaultKey = "last-handled-configuration"

// Annotations stores the essence as compact JSON plus a newline (as kubectl
// does with its own) in <prefix>/last-handled-configuration.
type Annotations struct {
	Keys    keys.Convention
	Key     string
	Ignored []fields.Path
}

// NewAnnotations returns Kopf's default diffbase storage.
func NewAnnotations() *Annotations {
	return &Annotations{Keys: keys.Convention{Prefix: keys.DefaultPrefix, V1: true}, Key: DefaultKey}
}

// Build returns the essence without this storage's annotations.
func (s *Annotations) Build(body map[string]any, extra []fields.Path) map[string]any {
	essence := BuildEssence(body, extra, s.Ignored)
	if m, ok := mapAt(essence, "metadata", "annotations"); ok {
		for _, k := range s.Keys.Keys(s.Key, body) {
			delete(m, k)
		}
	}
	fields.PruneEmptyStanzas(essence)
	return essence
}

// Fetch reads the first of the storage's keys that holds a value.
func (s *Annotations) Fetch(body map[string]any) (map[string]any, error) {
	for _, k := range s.Keys.Keys(s.Key, body) {
		raw, ok := fields.Resolve(body, fields.Path{"metadata", "annotations", k})
		if !ok || raw == nil {
			continue
		}
		text, _ := raw.(string)
		essence, err := decode(text)
		if err != nil {
			return nil, fmt.Errorf("read the last handled configuration from annotation %s: %w", k, err)
		}
		if essence != nil {
			return essence, nil
		}
	}
	return nil, nil
}

// Store writes the essence under all of the storage's keys.
func (s *Annotations) Store(body map[string]any, p *patch.Patch, essence map[string]any) string {
	encoded := string(Encode(essence)) + "\n"
	for _, k := range s.Keys.Keys(s.Key, body) {
		p.SetAnnotation(k, encoded)
	}
	s.Keys.StoreMarker(body, p)
	return encoded
}

// Forget removes the essence from the patch.
func (s *Annotations) Forget(body map[string]any, p *patch.Patch) {
	for _, k := range s.Keys.Keys(s.Key, body) {
		p.Forget("metadata", "annotations", k)
	}
}

// Status stores the essence as a JSON string (no newline) in a status
// field, status.kopf.last-handled-configuration by default, as Kopf's
// StatusDiffBaseStorage does. Status has more room than annotations
// (256 KiB in total), at the price of living in the status subresource.
type Status struct {
	Field   fields.Path
	Ignored []fields.Path
}

// NewStatus returns the status storage at Kopf's default field.
func NewStatus() *Status {
	return &Status{Field: fields.Path{"status", "kopf", DefaultKey}}
}

// Build returns the essence without this storage's field.
func (s *Status) Build(body map[string]any, extra []fields.Path) map[string]any {
	essence := BuildEssence(body, extra, s.Ignored)
	fields.RemovePruning(essence, s.Field)
	fields.PruneEmptyStanzas(essence)
	return essence
}

// Fetch reads the string at the field.
func (s *Status) Fetch(body map[string]any) (map[string]any, error) {
	raw, ok := fields.Resolve(body, s.Field)
	if !ok || raw == nil {
		return nil, nil
	}
	text, _ := raw.(string)
	essence, err := decode(text)
	if err != nil {
		return nil, fmt.Errorf("read the last handled configuration from %s: %w", s.Field, err)
	}
	return essence, nil
}

// Store writes the encoded essence at the field.
func (s *Status) Store(_ map[string]any, p *patch.Patch, essence map[string]any) string {
	encoded := string(Encode(essence))
	p.Set(encoded, slices.Clone(s.Field)...)
	return encoded
}

// Forget removes the essence from the patch.
func (s *Status) Forget(_ map[string]any, p *patch.Patch) { p.Forget(slices.Clone(s.Field)...) }

// decode parses a stored essence; "null" means none, anything but a JSON
// object is an error.
func decode(text string) (map[string]any, error) {
	if strings.TrimSpace(text) == "" {
		return nil, fmt.Errorf("empty value")
	}
	v, ok := parsePlain(text)
	if !ok {
		if err := json.Unmarshal([]byte(text), &v); err != nil {
			return nil, err
		}
	}
	if v == nil {
		return nil, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("not a JSON object: %.80s", text)
	}
	return m, nil
}

func mapAt(body map[string]any, path ...string) (map[string]any, bool) {
	v, ok := fields.Resolve(body, path)
	if !ok {
		return nil, false
	}
	m, ok := v.(map[string]any)
	return m, ok
}
