// Package indexing holds Kopf's indices: in-memory maps from keys to the
// values that objects contribute (one value per object and key), built by
// index handlers from every object of a kind and read by all other handlers.
package indexing

import (
	"reflect"
	"sort"
	"sync"
)

// Index is one index: key -> the values of the objects under that key.
// Reads and writes may come from several goroutines.
type Index struct {
	mu sync.RWMutex
	// stores maps a key to the values of the objects under it.
	stores map[any]map[string]any
	// keys maps an object to the keys it contributes to.
	keys map[string][]any
}

// Replace sets an object's contributions: its old values go, the new ones
// come. An empty map removes the object's values.
func (ix *Index) Replace(object string, entries map[any]any) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.removeLocked(object)
	if len(entries) == 0 {
		return
	}
	if ix.stores == nil {
		ix.stores, ix.keys = map[any]map[string]any{}, map[string][]any{}
	}
	for k, v := range entries {
		store := ix.stores[k]
		if store == nil {
			store = map[string]any{}
			ix.stores[k] = store
		}
		store[object] = v
		ix.keys[object] = append(ix.keys[object], k)
	}
}

// Remove takes an object's values out; empty keys go too.
func (ix *Index) Remove(object string) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.removeLocked(object)
}

func (ix *Index) removeLocked(object string) {
	for _, k := range ix.keys[object] {
		delete(ix.stores[k], object)
		if len(ix.stores[k]) == 0 {
			delete(ix.stores, k)
		}
	}
	delete(ix.keys, object)
}

// Clear empties the index.
func (ix *Index) Clear() {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.stores, ix.keys = nil, nil
}

// Get returns the values under the key, ordered by their objects (namespace,
// name), so that the same index reads the same way twice.
func (ix *Index) Get(key any) []any {
	if ix == nil {
		return []any{}
	}
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	store := ix.stores[key]
	objects := make([]string, 0, len(store))
	for o := range store {
		objects = append(objects, o)
	}
	sort.Strings(objects)
	out := make([]any, len(objects))
	for i, o := range objects {
		out[i] = store[o]
	}
	return out
}

// Has reports whether any object contributes to the key.
func (ix *Index) Has(key any) bool {
	if ix == nil {
		return false
	}
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return len(ix.stores[key]) > 0
}

// Keys returns the keys, in no particular order.
func (ix *Index) Keys() []any {
	if ix == nil {
		return []any{}
	}
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	out := make([]any, 0, len(ix.stores))
	for k := range ix.stores {
		out = append(out, k)
	}
	return out
}

// Len is the number of keys.
func (ix *Index) Len() int {
	if ix == nil {
		return 0
	}
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return len(ix.stores)
}

// Indices are the operator's indices by handler id.
type Indices struct {
	mu   sync.RWMutex
	byID map[string]*Index
}

// Get returns the index with the id, or nil if there is none. A nil index
// reads as an empty one (Get, Has, Keys and Len), so that a handler that
// asks for an unknown or not yet filled index sees nothing, not a panic.
func (s *Indices) Get(id string) *Index {
	if s == nil {
		return nil
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.byID[id]
}

// Ensure returns the index with the id, creating it.
func (s *Indices) Ensure(id string) *Index {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byID == nil {
		s.byID = map[string]*Index{}
	}
	ix := s.byID[id]
	if ix == nil {
		ix = &Index{}
		s.byID[id] = ix
	}
	return ix
}

// Entries turns what an index handler returned into the object's
// contributions, as Kopf does: a map gives its key-value pairs, nil means
// "no change" (ok is false), and any other value is stored under the key
// nil. Any Go map works: its keys are comparable by construction (use
// arrays or structs where Kopf uses tuples).
func Entries(result any) (entries map[any]any, ok bool) {
	if result == nil {
		return nil, false
	}
	v := reflect.ValueOf(result)
	if v.Kind() != reflect.Map {
		return map[any]any{nil: result}, true
	}
	entries = make(map[any]any, v.Len())
	iter := v.MapRange()
	for iter.Next() {
		entries[iter.Key().Interface()] = iter.Value().Interface()
	}
	return entries, true
}
