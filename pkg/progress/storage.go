package progress

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/kopf-go/kopf/pkg/fields"
	"github.com/kopf-go/kopf/pkg/keys"
	"github.com/kopf-go/kopf/pkg/patch"
)

// Storage keeps handler progress records on the object.
//
// Fetch reports a record that is there but unreadable as an error (and no
// record), so that the caller can log it and carry on without it.
//
// The body is read-only, as for diffbase.Storage: a storage must not
// modify it, nor keep it; changes go into the patch.
type Storage interface {
	Fetch(body map[string]any, id string) (*Record, error)
	Store(body map[string]any, p *patch.Patch, id string, r Record)
	Purge(body map[string]any, p *patch.Patch, id string)
	// Clear removes the storage's own fields from an essence, so that
	// progress never looks like a change of the object.
	Clear(essence map[string]any)
}

// Annotations stores each record as compact JSON in the annotation
// <prefix>/<handler id>, with Kopf's key forming (keys.Convention).
type Annotations struct {
	Keys keys.Convention
}

// NewAnnotations returns Kopf's default annotations storage: prefix
// kopf.zalando.org, V1 keys written too.
func NewAnnotations() *Annotations {
	return &Annotations{Keys: keys.Convention{Prefix: keys.DefaultPrefix, V1: true}}
}

// Fetch reads the record from the first of its keys that is present.
func (s *Annotations) Fetch(body map[string]any, id string) (*Record, error) {
	for _, key := range s.Keys.Keys(id, body) {
		raw, ok := fields.Resolve(body, fields.Path{"metadata", "annotations", key})
		if !ok || raw == nil {
			continue
		}
		text, _ := raw.(string)
		if strings.TrimSpace(text) == "null" {
			continue // what Kopf's verbose mode or a hand edit may leave
		}
		var r Record
		if err := json.Unmarshal([]byte(text), &r); err != nil {
			return nil, fmt.Errorf("read progress of %q from annotation %s: %w", id, key, err)
		}
		return &r, nil
	}
	return nil, nil
}

// Store writes the record under all of the handler's keys.
func (s *Annotations) Store(body map[string]any, p *patch.Patch, id string, r Record) {
	encoded, _ := r.MarshalJSON()
	for _, key := range s.Keys.Keys(id, body) {
		p.SetAnnotation(key, string(encoded))
	}
	s.Keys.StoreMarker(body, p)
}

// Purge deletes the record: keys present on the object are nulled, keys
// only added by this cycle's patch are dropped from it.
func (s *Annotations) Purge(body map[string]any, p *patch.Patch, id string) {
	for _, key := range s.Keys.Keys(id, body) {
		purge(body, p, fields.Path{"metadata", "annotations", key})
	}
}

// Clear removes every annotation under the storage's prefix.
func (s *Annotations) Clear(essence map[string]any) {
	annotations, _ := fields.Resolve(essence, fields.Path{"metadata", "annotations"})
	if m, ok := annotations.(map[string]any); ok {
		for key := range m {
			if strings.HasPrefix(key, s.Keys.Prefix+"/") {
				delete(m, key)
			}
		}
	}
	fields.PruneEmptyStanzas(essence)
}

// Status stores records as maps in status.<field>.<handler id>. Kopf reads
// its legacy records there (status.kopf.progress) but no longer writes them:
// ReadOnly does the same.
type Status struct {
	Field    fields.Path
	ReadOnly bool
}

// NewStatus keeps progress in status.kopf.progress.<id>, as Kopf's
// StatusProgressStorage; for another field, set Field
// (fields.Parse("status.my-operator.progress")).
func NewStatus() *Status { return &Status{Field: fields.Path{"status", "kopf", "progress"}} }

// Fetch reads status.<field>.<id>. (The field first, then the id in it:
// every cycle asks for every handler's record, and forming the whole path
// for each would cost an allocation.)
func (s *Status) Fetch(body map[string]any, id string) (*Record, error) {
	records, ok := fields.Resolve(body, s.Field)
	if !ok {
		return nil, nil
	}
	m, _ := records.(map[string]any)
	raw := m[id]
	if raw == nil {
		return nil, nil
	}
	encoded, err := json.Marshal(raw)
	if err != nil {
		return nil, fmt.Errorf("read progress of %q from %s: %w", id, s.Field, err)
	}
	var r Record
	if err := json.Unmarshal(encoded, &r); err != nil {
		return nil, fmt.Errorf("read progress of %q from %s: %w", id, s.Field, err)
	}
	return &r, nil
}

// Store writes status.<field>.<id> unless the storage is read-only.
func (s *Status) Store(_ map[string]any, p *patch.Patch, id string, r Record) {
	if s.ReadOnly {
		return
	}
	encoded, _ := r.MarshalJSON()
	var m map[string]any
	_ = json.Unmarshal(encoded, &m)
	p.Set(m, s.path(id)...)
}

// Purge deletes status.<field>.<id>, also when read-only, so that legacy
// records do not outlive the handling they describe.
func (s *Status) Purge(body map[string]any, p *patch.Patch, id string) {
	purge(body, p, s.path(id))
}

func (s *Status) path(id string) fields.Path {
	return append(slices.Clone(s.Field), id)
}

// Clear removes the storage's field from an essence.
func (s *Status) Clear(essence map[string]any) {
	fields.Remove(essence, s.Field)
	fields.PruneEmptyStanzas(essence)
}

// Multi writes to all its storages and reads from the first that has a record.
type Multi []Storage

// Fetch returns the first record found; a malformed record in an earlier
// storage is reported only if no later storage has a good one.
func (m Multi) Fetch(body map[string]any, id string) (*Record, error) {
	var firstErr error
	for _, s := range m {
		r, err := s.Fetch(body, id)
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		if r != nil {
			return r, nil
		}
	}
	return nil, firstErr
}

// Store writes to every storage.
func (m Multi) Store(body map[string]any, p *patch.Patch, id string, r Record) {
	for _, s := range m {
		s.Store(body, p, id, r)
	}
}

// Purge deletes from every storage.
func (m Multi) Purge(body map[string]any, p *patch.Patch, id string) {
	for _, s := range m {
		s.Purge(body, p, id)
	}
}

// Clear lets every storage clear its fields.
func (m Multi) Clear(essence map[string]any) {
	for _, s := range m {
		s.Clear(essence)
	}
}

// NewSmart returns Kopf's default progress storage: annotations, plus the
// legacy status.kopf.progress records read (never written).
func NewSmart() Multi {
	return Multi{NewAnnotations(), &Status{Field: fields.Path{"status", "kopf", "progress"}, ReadOnly: true}}
}

func purge(body map[string]any, p *patch.Patch, path fields.Path) {
	if _, ok := fields.Resolve(body, path); ok {
		p.Remove(path...)
	} else if _, ok := p.Get(path...); ok {
		p.Forget(path...)
	}
}
