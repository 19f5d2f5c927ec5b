package resources

import (
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// memoMapper remembers the REST mappings it has found. controller-runtime
// asks the mapper on every cache read and every metadata-only patch, and
// each answer of its dynamic mapper is built afresh (with errors made and
// dropped on the way): a fifth of the engine's allocations per cycle.
// Only found mappings are kept; a kind that is not there yet is asked for
// again, so that a CRD installed later is found.
type memoMapper struct {
	meta.RESTMapper
	mu    sync.RWMutex
	found map[mappingKey]*meta.RESTMapping
}

type mappingKey struct {
	kind    schema.GroupKind
	version string
}

func NewMemoMapper(m meta.RESTMapper) *memoMapper {
	return &memoMapper{RESTMapper: m, found: map[mappingKey]*meta.RESTMapping{}}
}

// RESTMapping answers from memory when asked for one version (or none),
// as the engine always asks; other questions go to the wrapped mapper.
func (m *memoMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	if len(versions) > 1 {
		return m.RESTMapper.RESTMapping(gk, versions...)
	}
	key := mappingKey{kind: gk}
	if len(versions) == 1 {
		key.version = versions[0]
	}
	m.mu.RLock()
	mapping, ok := m.found[key]
	m.mu.RUnlock()
	if ok {
		return mapping, nil
	}
	mapping, err := m.RESTMapper.RESTMapping(gk, versions...)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	m.found[key] = mapping
	m.mu.Unlock()
	return mapping, nil
}
