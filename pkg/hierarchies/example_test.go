package hierarchies_test

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kopf-go/kopf/pkg/hierarchies"
)

// A child made the owner's: owner reference, name, namespace and labels.
func ExampleAdopt() {
	owner := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "uid-1", Labels: map[string]string{"app": "web"}}}
	pod := &corev1.Pod{}
	if err := hierarchies.Adopt(pod, owner); err != nil {
		fmt.Println(err)
	}
	ref := pod.OwnerReferences[0]
	fmt.Println(pod.GenerateName, pod.Namespace, pod.Labels, ref.Kind, ref.Name, *ref.Controller)
	// Output:
	// web- shop map[app:web kopf.dev/owner-kind:deployment.apps] Deployment web true
}
