package hierarchies

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Adopt makes child a proper child of owner, as Kopf's adopt: an owner
// reference to the owner (AppendOwnerReference), a generateName after the
// owner's name (HarmonizeNaming), the owner's namespace (AdjustNamespace)
// and the owner's labels (Label), in that order; a controlled child (the
// default reference) also gets OwnerKindLabel, by which the engine's watch
// of children finds it (handlers.Children). Forced, Strict and Nested
// apply to the parts they belong to; the reference options configure the
// reference (Kopf's adopt always makes a blocking controller reference).
//
// Kopf's adopt takes the owner from the handler being run; here the owner
// is explicit, usually the handler's object. A cluster-scoped owner has no
// namespace to give: the child keeps its own, or loses it when Forced.
// Everything about the owner is checked before the child is changed.
func Adopt(child, owner Object, opts ...AdoptOption) error {
	c := newConfig(opts)
	ref, err := ownerReference(owner, c)
	if err != nil {
		return fmt.Errorf("adopt: %w", err)
	}
	appendReference(child, ref)
	if c.controller {
		labelOwnerKind(child, schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind))
	}
	if err := harmonizeNaming(child, owner.GetName(), c); err != nil {
		return fmt.Errorf("adopt: %w", err)
	}
	adjustNamespace(child, owner.GetNamespace(), c)
	if err := label(child, owner.GetLabels(), c); err != nil {
		return fmt.Errorf("adopt: %w", err)
	}
	return nil
}
