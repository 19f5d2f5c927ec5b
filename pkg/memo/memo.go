// Package memo holds Kopf's memos: in-memory values that handlers keep
// between calls, one memo per object (shared by that object's change
// handlers, daemons and timers) and one for the whole operator.
package memo

import (
	"maps"
	"sync"
)

// Memo is a map of values that several goroutines may use at once (an
// object's daemons run beside its change handlers). The zero value is
// ready to use.
type Memo struct {
	mu     sync.RWMutex
	values map[string]any
}

// Get returns the value under the key, and whether there is one.
func (m *Memo) Get(key string) (any, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	v, ok := m.values[key]
	return v, ok
}

// Set stores a value under the key.
func (m *Memo) Set(key string, value any) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.values == nil {
		m.values = map[string]any{}
	}
	m.values[key] = value
}

// Delete removes the key.
func (m *Memo) Delete(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.values, key)
}

// Update changes the value under the key atomically: fn gets the current
// value (nil and false if there is none) and returns the new one.
func (m *Memo) Update(key string, fn func(value any, ok bool) any) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.values == nil {
		m.values = map[string]any{}
	}
	v, ok := m.values[key]
	m.values[key] = fn(v, ok)
}

// Keys returns the keys, in no particular order.
func (m *Memo) Keys() []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]string, 0, len(m.values))
	for k := range m.values {
		out = append(out, k)
	}
	return out
}

// Copy returns a shallow copy: the keys are its own, the values shared.
// Each object's memo starts as a copy of the operator's, as in Kopf, so a
// value that is a pointer (a client, a shared cache) is shared by all.
func (m *Memo) Copy() *Memo {
	if m == nil {
		return &Memo{}
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	return &Memo{values: maps.Clone(m.values)}
}
