// Command operator is the process tests' operator: on creation of a
// KopfExample it creates a ConfigMap through the handlers' client, so
// that its trace holds a cycle, a handler's attempt and the handler's own
// API request.
package main

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kopf-go/kopf/handlers"
	"github.com/kopf-go/kopf/pkg/cause"
)

func main() {
	reg := handlers.NewRegistry()
	kex := handlers.ForKind(reg, "kopf.dev", "v1", "KopfExample")
	handlers.OnCreate(kex, "fetch", func(ctx context.Context, obj *unstructured.Unstructured, _ *cause.Change) (any, error) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: obj.GetNamespace(), Name: obj.GetName() + "-made"}}
		return nil, handlers.Client(ctx).Create(ctx, cm)
	})
	handlers.Main(reg, handlers.RunOptions{})
}
