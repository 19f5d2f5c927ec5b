package memory

import "github.com/kopf-go/kopf/internal/execution"

// Gauge is what the memories count their objects' standings with: a
// Prometheus gauge, or a fake in tests.
type Gauge interface{ Add(float64) }

// Stand records where the object stands after a cycle that handled a
// cause, moving it between the kind's gauges. A forgotten object is not
// counted again: its memory may still be in a cycle's hands.
func (m *Store) Stand(mem *Object, s execution.Standing) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if mem.dropped || m.closed {
		return
	}
	m.moveLocked(mem.standing, s)
	mem.standing = s
}

// dropLocked takes a forgotten object (gone, or replaced by a new object
// of the same name) out of the gauges.
func (m *Store) dropLocked(mem *Object) {
	if mem == nil || mem.dropped {
		return
	}
	mem.dropped = true
	if !m.closed {
		m.moveLocked(mem.standing, execution.Standing{})
	}
}

// Release takes every object out of the gauges when the operator stops,
// so that another operator in the same process (as in tests) starts from
// what it sees itself; nothing is counted afterwards.
func (m *Store) Release() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	for _, mem := range m.byUID {
		m.moveLocked(mem.standing, execution.Standing{})
	}
	m.closed = true
}

func (m *Store) moveLocked(from, to execution.Standing) {
	move(m.retrying, from.Retrying, to.Retrying)
	move(m.failed, from.Failed, to.Failed)
}

// move adds or removes one object from a gauge when its state changes.
func move(g Gauge, from, to bool) {
	switch {
	case g == nil || from == to:
	case to:
		g.Add(1)
	default:
		g.Add(-1)
	}
}
