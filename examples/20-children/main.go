// Command 20-children keeps, for each KopfExample, a ConfigMap
// "<name>-child" in its namespace whose data.field is the object's
// spec.field: made on creation, updated when spec.field changes, and put
// back within moments when it is deleted or edited by hand. The child
// handler hears of the ConfigMaps that Adopt made the objects'; the
// object's own handlers do not run again for them.
package main

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kopf-go/kopf/handlers"

	"github.com/kopf-go/kopf/pkg/cause"
	"github.com/kopf-go/kopf/pkg/hierarchies"
)

func main() {
	reg := handlers.NewRegistry()
	kex := handlers.ForKind(reg, "kopf.dev", "v1", "KopfExample")
	handlers.OnCreate(kex, "create_fn", ensure)
	handlers.OnUpdate(kex, "update_fn", ensure, handlers.Field("spec.field"))
	handlers.OnResume(kex, "resume_fn", ensure) // children deleted while the operator was down
	configMaps := handlers.Children[*corev1.ConfigMap](kex)
	handlers.OnChild(configMaps, "restore_fn", restore)
	handlers.Main(reg, handlers.RunOptions{})
}

// ensure makes the object's child, or updates it, from the object's spec.
func ensure(ctx context.Context, obj *unstructured.Unstructured, c *cause.Change) (any, error) {
	cm := &corev1.ConfigMap{}
	err := handlers.Client(ctx).Get(ctx, types.NamespacedName{Namespace: obj.GetNamespace(), Name: childName(obj)}, cm)
	switch {
	case apierrors.IsNotFound(err):
		return nil, create(ctx, obj)
	case err != nil:
		return nil, err
	}
	return nil, update(ctx, obj, cm)
}

// restore puts the child back as the object wants it. The child it gets
// is the latest state (a read through the cache could be older).
func restore(ctx context.Context, obj *unstructured.Unstructured, child *corev1.ConfigMap, c *cause.Child) error {
	if child.Name != childName(obj) {
		return nil // another ConfigMap of the object's: not this example's
	}
	if c.Reason == cause.ChildDeleted {
		return create(ctx, obj)
	}
	return update(ctx, obj, child)
}

func childName(obj *unstructured.Unstructured) string { return obj.GetName() + "-child" }

func field(obj *unstructured.Unstructured) string {
	value, _, _ := unstructured.NestedString(obj.Object, "spec", "field")
	return value
}

// create makes the child, adopted: owned by the object (deleted with it),
// in its namespace, with its labels and the owner-kind label that the
// child handlers' watch selects by.
func create(ctx context.Context, obj *unstructured.Unstructured) error {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: childName(obj)}, Data: map[string]string{"field": field(obj)}}
	if err := hierarchies.Adopt(cm, obj, hierarchies.Strict()); err != nil {
		return err
	}
	err := handlers.Client(ctx).Create(ctx, cm)
	if apierrors.IsAlreadyExists(err) {
		return nil // made meanwhile: its own event brings it here again
	}
	return err
}

// update sets the child's data.field, unless it is right already.
func update(ctx context.Context, obj *unstructured.Unstructured, cm *corev1.ConfigMap) error {
	if cm.Data["field"] == field(obj) {
		return nil
	}
	cm.Data = map[string]string{"field": field(obj)}
	return handlers.Client(ctx).Update(ctx, cm)
}
