package scopes

import (
	"slices"
	"sync"
)

// Served is the set of namespaces served now, which changes as namespaces
// that match the patterns come and go; the engine, peering and the ring
// follow it. The whole cluster is a set of its own, which never changes.
type Served struct {
	all bool
	// known is closed once the set is known: at once for the whole
	// cluster and fixed names, at the first listing of namespaces for
	// patterns with globs.
	known chan struct{}

	mu      sync.Mutex
	names   []string
	changed chan struct{}
}

// ServeAll is the whole cluster.
func ServeAll() *Served { return &Served{all: true, known: closed(), changed: make(chan struct{})} }

// ServeNames starts with the given namespaces (sorted).
func ServeNames(names []string) *Served {
	return &Served{names: sortedSet(names), known: closed(), changed: make(chan struct{})}
}

// ServeLater starts with no namespace, and is not known until the first
// Set.
func ServeLater() *Served { return &Served{known: make(chan struct{}), changed: make(chan struct{})} }

// Ready is closed once the set is known.
func (s *Served) Ready() <-chan struct{} { return s.known }

// Known tells whether the set is known.
func (s *Served) Known() bool {
	select {
	case <-s.known:
		return true
	default:
		return false
	}
}

// All tells whether the whole cluster is served.
func (s *Served) All() bool { return s.all }

// Now returns the served namespaces (nil for the whole cluster) and a
// channel closed at their next change.
func (s *Served) Now() ([]string, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.names), s.changed
}

// Set replaces the served namespaces and tells whether they changed. The
// whole cluster never changes.
func (s *Served) Set(names []string) bool {
	if s.all {
		return false
	}
	names = sortedSet(names)
	s.mu.Lock()
	defer s.mu.Unlock()
	first := !s.Known()
	if first {
		close(s.known)
	}
	if slices.Equal(names, s.names) && !first {
		return false
	}
	s.names = names
	close(s.changed)
	s.changed = make(chan struct{})
	return true
}

func sortedSet(names []string) []string {
	names = slices.Clone(names)
	slices.Sort(names)
	return slices.Compact(names)
}

func closed() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}
