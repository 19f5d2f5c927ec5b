package handlers

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/pkg/hierarchies"
)

// The hierarchies kit makes the objects a handler creates children of the
// handled object, as Kopf's kopf.adopt, kopf.label (LabelChild) and the
// like:
//
//	pod := &corev1.Pod{Spec: ...}
//	if err := handlers.Adopt(pod, obj); err != nil { ... }
//	err := c.Create(ctx, pod) // owned, named "<owner>-xxxxx", in the owner's namespace, with its labels
//
// Kopf's functions default the owner (and the labels, name and namespace)
// to the object being handled, found through a context variable. Here the
// owner is always an explicit argument: usually the handler's obj. The
// functions change the child in memory only; create or update it with a
// client, e.g. the manager's. Owners whose TypeMeta is empty (typed
// objects from the cache usually are) get their kind from client-go's
// scheme, which knows the built-in kinds; for typed kinds of your own,
// pass OwnerScheme(mgr.GetScheme()) or OwnerGVK.

// AdoptOption configures Adopt: Forced, Strict, Nested and the
// ReferenceOptions.
type AdoptOption = hierarchies.AdoptOption

// ReferenceOption configures an owner reference: NotController,
// NoBlockOwnerDeletion, OwnerGVK, OwnerScheme.
type ReferenceOption = hierarchies.ReferenceOption

// LabelOption configures LabelChild: Forced, Nested.
type LabelOption = hierarchies.LabelOption

// NamingOption configures HarmonizeNaming: Forced, Strict.
type NamingOption = hierarchies.NamingOption

// NamespaceOption configures AdjustNamespace: Forced.
type NamespaceOption = hierarchies.NamespaceOption

// ForcedOption is what Forced returns; it suits Adopt, LabelChild,
// HarmonizeNaming and AdjustNamespace.
type ForcedOption = hierarchies.ForcedOption

// StrictOption is what Strict returns; it suits Adopt and HarmonizeNaming.
type StrictOption = hierarchies.StrictOption

// NestedOption is what Nested returns; it suits Adopt and LabelChild.
type NestedOption = hierarchies.NestedOption

// Adopt makes child a child of owner (Kopf's kopf.adopt): an owner
// reference that is the child's controller and blocks the owner's
// deletion, generateName "<owner's name>-" unless the child has a name,
// the owner's namespace unless the child has one, and the owner's labels
// where the child has none of that key. Forced overwrites the child's own
// values, Strict names it exactly as the owner, Nested("spec.template")
// labels nested templates too. Unlike Kopf, the owner is explicit.
func Adopt(child, owner client.Object, opts ...AdoptOption) error {
	return hierarchies.Adopt(child, owner, append([]AdoptOption{defaultOwnerScheme()}, opts...)...)
}

// AppendOwnerReference adds an owner reference to owner, unless one with
// its uid is there (Kopf's kopf.append_owner_reference). Unlike Kopf, the
// owner is explicit.
func AppendOwnerReference(child, owner client.Object, opts ...ReferenceOption) error {
	return hierarchies.AppendOwnerReference(child, owner, append([]ReferenceOption{defaultOwnerScheme()}, opts...)...)
}

// RemoveOwnerReference removes the owner references with owner's uid
// (Kopf's kopf.remove_owner_reference). Unlike Kopf, the owner is explicit.
func RemoveOwnerReference(child, owner client.Object) { hierarchies.RemoveOwnerReference(child, owner) }

// LabelChild puts labels on child where it has none of that key, or
// overwriting if Forced; Nested also labels nested templates that exist
// (Kopf's kopf.label; the filter of handlers by labels is Labels). Unlike
// Kopf, the labels are explicit: pass obj.GetLabels() for the handled
// object's.
func LabelChild(child client.Object, labels map[string]string, opts ...LabelOption) error {
	return hierarchies.Label(child, labels, opts...)
}

// HarmonizeNaming gives child generateName "<name>-" (or, if Strict, the
// name itself) when it has no name of its own, or if Forced (Kopf's
// kopf.harmonize_naming). Unlike Kopf, the name is explicit.
func HarmonizeNaming(child client.Object, name string, opts ...NamingOption) error {
	return hierarchies.HarmonizeNaming(child, name, opts...)
}

// AdjustNamespace puts child into namespace when it has none, or if Forced
// (Kopf's kopf.adjust_namespace). Unlike Kopf, the namespace is explicit.
func AdjustNamespace(child client.Object, namespace string, opts ...NamespaceOption) {
	hierarchies.AdjustNamespace(child, namespace, opts...)
}

// EachChild calls fn for each child, stopping at the first error, for
// Kopf's calls with lists of objects:
//
//	err := handlers.EachChild(pods, func(p *corev1.Pod) error { return handlers.Adopt(p, obj) })
func EachChild[T client.Object](children []T, fn func(child T) error) error {
	return hierarchies.EachChild(children, fn)
}

// Forced overwrites the child's own labels, names and namespace (Kopf's
// forced=True).
func Forced() ForcedOption { return hierarchies.Forced() }

// Strict names the child exactly after the owner instead of using a
// generateName prefix (Kopf's strict=True).
func Strict() StrictOption { return hierarchies.Strict() }

// Nested labels the nested templates at these dotted paths too, e.g.
// "spec.template" (Kopf's nested=); missing ones are not created.
func Nested(paths ...string) NestedOption { return hierarchies.Nested(paths...) }

// NotController makes the owner reference a plain one (Kopf's
// controller=False).
func NotController() ReferenceOption { return hierarchies.NotController() }

// NoBlockOwnerDeletion lets the owner's foreground deletion finish before
// the child is gone (Kopf's block_owner_deletion=False).
func NoBlockOwnerDeletion() ReferenceOption { return hierarchies.NoBlockOwnerDeletion() }

// OwnerGVK gives the owner's group, version and kind when its TypeMeta is
// empty and the scheme does not know its type.
func OwnerGVK(gvk schema.GroupVersionKind) ReferenceOption { return hierarchies.OwnerGVK(gvk) }

// OwnerScheme looks up the kind of an owner with an empty TypeMeta in s,
// e.g. mgr.GetScheme() for typed kinds of your own; the default is
// client-go's scheme of the built-in kinds.
func OwnerScheme(s *runtime.Scheme) ReferenceOption { return hierarchies.OwnerScheme(s) }

// defaultOwnerScheme comes before the caller's options, which may replace
// it.
func defaultOwnerScheme() ReferenceOption { return hierarchies.OwnerScheme(scheme.Scheme) }
