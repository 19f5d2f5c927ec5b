package share

import (
	"slices"
	"sync/atomic"

	"github.com/kopf-go/kopf/internal/ring"
	"github.com/kopf-go/kopf/internal/sharding"
)

// Placer places objects at their creation, in a mutating admission
// webhook (docs/sharding.md, "Placement at admission"): the replica's ring
// ownership, once the engine has made it; until then, and in a process
// that is no ring member, it places nothing and the assigner's sweep does.
type Placer struct {
	own atomic.Pointer[Ownership]
}

// set gives the placer the replica's ownership.
func (p *Placer) set(own *Ownership) { p.own.Store(own) }

// Placement is what an object being created gets: its owner label and
// grant, both naming Owner, and its bucket label, under the ring's keys;
// and, if its kind has change handlers or daemons, the operator's
// Finalizer, which the owner's engine would add before any handler ran
// (a write saved): so that no object takes its name while a replica
// still works on it (docs/sharding.md, "One object, one name").
type Placement struct {
	OwnerLabel, GrantAnnotation, Owner string
	BucketLabel, Bucket                string
	Finalizer                          string
}

// Place is the placement of an object being created with the given
// namespace, name and labels: the member that the last published epoch
// hashes it to. None (false) if the placer has no ownership, the replica
// has seen no epoch yet, the object has no name yet (generateName), it
// carries the ring's owner label already, or its namespace is not one the
// ring serves.
func (p *Placer) Place(namespace, name string, labels map[string]string) (Placement, bool) {
	own := p.own.Load()
	if own == nil || name == "" {
		return Placement{}, false
	}
	if _, ok := labels[own.keys.Owner]; ok {
		return Placement{}, false
	}
	if namespace != "" && !own.serves(namespace) {
		return Placement{}, false
	}
	e, _ := own.epoch.now()
	owner := sharding.Owner(sharding.ObjectKey(namespace, name), e.Placing())
	if owner == "" {
		return Placement{}, false
	}
	return Placement{OwnerLabel: own.keys.Owner, GrantAnnotation: own.keys.Granted, Owner: owner,
		BucketLabel: own.keys.Bucket, Bucket: ring.BucketLabel(namespace, name), Finalizer: own.finalizer}, true
}

// serves reports whether the ring serves the namespace, as its assigner
// does.
func (r *Ownership) serves(namespace string) bool {
	s := r.assigner
	if s.Served != nil {
		names, _ := s.Served.Now()
		return s.Served.All() || slices.Contains(names, namespace)
	}
	return len(s.Namespaces) == 0 || slices.Contains(s.Namespaces, namespace)
}
