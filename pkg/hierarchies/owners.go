package hierarchies

import (
	"errors"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// AppendOwnerReference makes owner an owner of child, as Kopf's
// append_owner_reference: it adds {apiVersion, kind, name, uid,
// controller: true, blockOwnerDeletion: true} to the child's
// ownerReferences, unless a reference with the owner's uid is already
// there (whatever its other fields say). NotController and
// NoBlockOwnerDeletion turn the flags off.
//
// The owner must exist in the cluster (have a uid) and have a name and a
// known kind: its TypeMeta, or OwnerGVK, or OwnerScheme. Like Kopf, it
// does not check for another controller reference on the child; the API
// server rejects a second one.
func AppendOwnerReference(child, owner Object, opts ...ReferenceOption) error {
	ref, err := ownerReference(owner, newConfig(opts))
	if err != nil {
		return err
	}
	appendReference(child, ref)
	return nil
}

// RemoveOwnerReference removes every owner reference with the owner's uid
// from child, as Kopf's remove_owner_reference. Only the uid matters, so
// the owner needs no kind; an owner without a uid removes nothing.
func RemoveOwnerReference(child, owner Object) {
	uid := owner.GetUID()
	if uid == "" {
		return
	}
	refs := child.GetOwnerReferences()
	if !slices.ContainsFunc(refs, func(r metav1.OwnerReference) bool { return r.UID == uid }) {
		return
	}
	kept := slices.DeleteFunc(slices.Clone(refs), func(r metav1.OwnerReference) bool { return r.UID == uid })
	child.SetOwnerReferences(kept)
}

// appendReference adds ref to the child's owner references unless one with
// its uid is there. The slice is copied, so that objects sharing a backing
// array (shallow copies) do not see the change.
func appendReference(child Object, ref metav1.OwnerReference) {
	refs := child.GetOwnerReferences()
	if slices.ContainsFunc(refs, func(r metav1.OwnerReference) bool { return r.UID == ref.UID }) {
		return
	}
	child.SetOwnerReferences(append(slices.Clip(refs), ref))
}

// ownerReference builds the reference to owner, as Kopf's
// build_owner_reference, but refuses owners that the API server would
// refuse in a reference (Kopf leaves such fields out instead).
func ownerReference(owner Object, c *config) (metav1.OwnerReference, error) {
	gvk, err := ownerGVK(owner, c)
	if err != nil {
		return metav1.OwnerReference{}, err
	}
	switch {
	case owner.GetName() == "":
		return metav1.OwnerReference{}, fmt.Errorf("refer to the owner %s: it has no name", gvk.Kind)
	case owner.GetUID() == "":
		return metav1.OwnerReference{}, fmt.Errorf("refer to the owner %s %s: it has no uid; create it or read it from the cluster first", gvk.Kind, owner.GetName())
	}
	return metav1.OwnerReference{
		APIVersion:         gvk.GroupVersion().String(),
		Kind:               gvk.Kind,
		Name:               owner.GetName(),
		UID:                owner.GetUID(),
		Controller:         new(c.controller),
		BlockOwnerDeletion: new(c.blockOwnerDeletion),
	}, nil
}

// errUnknownKind says that neither the owner nor the options tell its kind.
var errUnknownKind = errors.New("its apiVersion and kind are empty; set them, or pass OwnerGVK or OwnerScheme")

// ownerGVK finds the owner's group, version and kind: OwnerGVK first, then
// the owner's own TypeMeta, then OwnerScheme (client-go's by default).
func ownerGVK(owner Object, c *config) (schema.GroupVersionKind, error) {
	if !c.gvk.Empty() {
		return c.gvk, nil
	}
	if gvk := owner.GetObjectKind().GroupVersionKind(); gvk.Version != "" && gvk.Kind != "" {
		return gvk, nil
	}
	if c.scheme == nil {
		return schema.GroupVersionKind{}, fmt.Errorf("refer to the owner %s: %w", owner.GetName(), errUnknownKind)
	}
	gvks, _, err := c.scheme.ObjectKinds(owner)
	if err != nil {
		return schema.GroupVersionKind{}, fmt.Errorf("find the kind of the owner %s: %w", owner.GetName(), err)
	}
	if len(gvks) != 1 {
		return schema.GroupVersionKind{}, fmt.Errorf("find the kind of the owner %s: the scheme has %d kinds for %T; pass OwnerGVK", owner.GetName(), len(gvks), owner)
	}
	return gvks[0], nil
}
