package conversion

import (
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Served counts the reviews that converted objects of each kind, so that
// the engine can tell that the API server converts a kind through this
// webhook, and not without it (managed.Gate).
type Served struct {
	mu     sync.Mutex
	counts map[schema.GroupKind]uint64
}

// Count is how many reviews converted objects of the kind so far.
func (s *Served) Count(gk schema.GroupKind) uint64 {
	if s == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[gk]
}

// Add counts a review that converted objects of the kind.
func (s *Served) Add(gk schema.GroupKind) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.counts == nil {
		s.counts = map[schema.GroupKind]uint64{}
	}
	s.counts[gk]++
}
