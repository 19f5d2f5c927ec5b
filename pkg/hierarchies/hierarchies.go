// Package hierarchies makes Kubernetes objects children of other objects,
// as Kopf's hierarchies kit does (kopf/_kits/hierarchies.py): it adds or
// removes owner references, copies labels, derives names from the owner's
// name, and puts children into the owner's namespace. It works on typed
// objects (such as *corev1.Pod) and on *unstructured.Unstructured alike,
// both as children and as owners, and only changes the objects in memory:
// creating or updating them is the caller's business.
//
// Kopf's functions and their counterparts:
//
//	kopf.append_owner_reference(objs, owner)  AppendOwnerReference(child, owner, opts...)
//	kopf.remove_owner_reference(objs, owner)  RemoveOwnerReference(child, owner)
//	kopf.label(objs, labels)                  Label(child, labels, opts...)
//	kopf.harmonize_naming(objs, name)         HarmonizeNaming(child, name, opts...)
//	kopf.adjust_namespace(objs, namespace)    AdjustNamespace(child, namespace, opts...)
//	kopf.adopt(objs, owner)                   Adopt(child, owner, opts...)
//	forced=True, strict=True, nested=...      Forced(), Strict(), Nested(paths...)
//	controller=False                          NotController()
//	block_owner_deletion=False                NoBlockOwnerDeletion()
//
// The differences from Kopf: the owner, the labels, the name and the
// namespace are always explicit (Kopf defaults them to the object being
// handled); each function takes one child, and EachChild runs one over a
// slice; an empty name or namespace counts as unset, since typed objects
// cannot tell "" from absent. Owners whose TypeMeta is empty (typed
// objects from the cache usually are) get their kind from client-go's
// scheme, which knows the built-in kinds; for typed kinds of your own,
// pass OwnerScheme(mgr.GetScheme()) or OwnerGVK. In a handler:
//
//	pod := &corev1.Pod{Spec: ...}
//	if err := hierarchies.Adopt(pod, obj); err != nil { ... }
//	err := c.Create(ctx, pod) // owned, named "<owner>-xxxxx", in the owner's namespace, with its labels
package hierarchies

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Object is a Kubernetes object with metadata, typed or unstructured. Every
// controller-runtime client.Object is one.
type Object interface {
	metav1.Object
	runtime.Object
}

// EachChild calls fn for every child in order and stops at the first error,
// which it wraps with the child's position and name. It stands in for
// Kopf's calls with a list of objects:
//
//	err := hierarchies.EachChild(pods, func(p *corev1.Pod) error { return hierarchies.Adopt(p, owner) })
func EachChild[T Object](children []T, fn func(child T) error) error {
	for i, child := range children {
		if err := fn(child); err != nil {
			return fmt.Errorf("child %d (%s): %w", i, displayName(child), err)
		}
	}
	return nil
}

// displayName names an object in errors: its name, else its name prefix.
func displayName(obj Object) string {
	if name := obj.GetName(); name != "" {
		return name
	}
	if prefix := obj.GetGenerateName(); prefix != "" {
		return prefix + "*"
	}
	return "unnamed"
}
