package engine

import (
	"fmt"
	"slices"
	"sync"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kopf-go/kopf/internal/memory"
	"github.com/kopf-go/kopf/internal/registry"
	"github.com/kopf-go/kopf/internal/scopes"
)

// kindKey is one reconciler's plan: a resource, and the registrations
// that select it, in registration order; their handlers are merged.
type kindKey struct {
	gvk   schema.GroupVersionKind
	kinds []*registry.Kind
}

// id tells reconcilers apart: one resource with one set of registrations.
func (k kindKey) id() string {
	id := k.gvk.String()
	for _, kind := range k.kinds {
		id += fmt.Sprintf("|%p", kind)
	}
	return id
}

// kind is the registration that the reconciler runs: the one that selects
// the resource, or the merge of several.
func (k kindKey) kind() (*registry.Kind, error) {
	if len(k.kinds) == 1 {
		return k.kinds[0], nil
	}
	return registry.Merge(k.gvk, k.kinds)
}

func unstructuredKind(k *registry.Kind) bool {
	_, ok := k.NewObject().(*unstructured.Unstructured)
	return ok
}

// kindSet holds the engine's reconcilers: those of the resources the
// cluster serves now are active, and a run watches them. A reconciler is
// made when its resource is first served and kept for good, with its
// memories; a resource that is no longer served drops its reconciler from
// the active ones, and the engine forgets its objects.
type kindSet struct {
	reg *registry.Registry
	// static are the kinds whose GVK is known at setup (For, ForKind).
	static map[*registry.Kind]schema.GroupVersionKind
	// make makes a reconciler; with the memories of the one it replaces,
	// if any.
	make func(*registry.Kind, schema.GroupVersionKind, *memory.Store) *kindState
	log  logr.Logger

	mu     sync.Mutex
	made   map[string]*kindState
	order  []*kindState
	active []*kindState
	// said are the waits and refusals already logged, so that each is
	// logged once while it lasts.
	said map[string]bool
}

// note is a wait or a refusal of resolve's, logged once while it lasts.
type note struct {
	msg string
	err error
	kv  []any
}

func (n note) key() string { return fmt.Sprint(n.msg, n.kv) }

// plan decides which kinds the served resources make active, in
// registration order, and what to say of those left out. Registrations
// that select one resource share its reconciler, their handlers merged,
// if their objects are of one Go type (else the first serves it).
func (k *kindSet) plan(served []scopes.Resource) ([]kindKey, []note) {
	has := map[schema.GroupVersionKind]bool{}
	for _, r := range served {
		has[r.GVK()] = true
	}
	var order []schema.GroupVersionKind
	byGVK := map[schema.GroupVersionKind][]*registry.Kind{}
	var notes []note
	add := func(kind *registry.Kind, gvk schema.GroupVersionKind) {
		prev := byGVK[gvk]
		if len(prev) == 0 {
			order = append(order, gvk)
		} else if unstructuredKind(prev[0]) != unstructuredKind(kind) {
			notes = append(notes, note{msg: "A resource is selected as typed and as unstructured objects; its first registration serves it.",
				kv: []any{"resource", gvk.String()}})
			return
		}
		byGVK[gvk] = append(prev, kind)
	}
	waiting := "Waiting for the resource to be served (its CRD to be installed)."
	for _, kind := range k.reg.Kinds {
		if gvk, ok := k.static[kind]; ok {
			if has[gvk] {
				add(kind, gvk)
			} else {
				notes = append(notes, note{msg: waiting, kv: []any{"kind", gvk.String()}})
			}
			continue
		}
		resources, err := kind.Selector.Select(served)
		if err != nil {
			notes = append(notes, note{msg: "The resource is not served.", err: err, kv: []any{"selector", kind.Selector.String()}})
			continue
		}
		if len(resources) == 0 && kind.Selector.Specific() {
			notes = append(notes, note{msg: waiting, kv: []any{"selector", kind.Selector.String()}})
		}
		for _, r := range resources {
			add(kind, r.GVK())
		}
	}
	var keys []kindKey
	for _, gvk := range order {
		key := kindKey{gvk: gvk, kinds: byGVK[gvk]}
		if _, err := key.kind(); err != nil {
			notes = append(notes, note{msg: "The resource is not served.", err: err, kv: []any{"resource", gvk.String()}})
			continue
		}
		keys = append(keys, key)
	}
	return keys, notes
}

// resolve makes the reconcilers of the served resources active, and
// returns those that were active and whose resources are no longer
// served. A resource whose registrations change (a category comes to
// select it too) gets a new reconciler, which takes over the memories of
// the one it replaces: its objects are not new, and their daemons go on.
func (k *kindSet) resolve(served []scopes.Resource) (dropped []*kindState) {
	keys, notes := k.plan(served)
	k.mu.Lock()
	defer k.mu.Unlock()
	said := map[string]bool{}
	for _, n := range notes {
		said[n.key()] = true
		switch {
		case k.said[n.key()]:
		case n.err != nil:
			k.log.Error(n.err, n.msg, n.kv...)
		default:
			k.log.Info(n.msg, n.kv...)
		}
	}
	k.said = said
	before := map[schema.GroupVersionKind]*kindState{}
	for _, r := range k.active {
		before[r.objects.GVK] = r
	}
	active := make([]*kindState, 0, len(keys))
	stillServed := map[schema.GroupVersionKind]bool{}
	for _, key := range keys {
		r := k.made[key.id()]
		if r == nil {
			kind, _ := key.kind() // plan has checked it
			var mems *memory.Store
			if prev := before[key.gvk]; prev != nil {
				mems = prev.memories
			}
			r = k.make(kind, key.gvk, mems)
			k.made[key.id()] = r
			k.order = append(k.order, r)
		}
		active = append(active, r)
		stillServed[key.gvk] = true
	}
	for _, r := range k.active {
		if !stillServed[r.objects.GVK] {
			dropped = append(dropped, r)
		}
	}
	k.active = active
	return dropped
}

// differs tells whether the served resources would make other kinds
// active than those active now.
func (k *kindSet) differs(served []scopes.Resource) bool {
	keys, _ := k.plan(served)
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(keys) != len(k.active) {
		return true
	}
	for i, key := range keys {
		if k.made[key.id()] != k.active[i] {
			return true
		}
	}
	return false
}

// current are the active reconcilers.
func (k *kindSet) current() []*kindState {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Clone(k.active)
}

// all are every reconciler made so far.
func (k *kindSet) all() []*kindState {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Clone(k.order)
}
