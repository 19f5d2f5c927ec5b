package hierarchies

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestAdoptTypedOwnerFromCache checks the default scheme: a typed
// owner as the cache gives it (no TypeMeta) can adopt without options,
// and the caller's OwnerScheme replaces the default.
func TestAdoptTypedOwnerFromCache(t *testing.T) {
	owner := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{
		Name: "web", Namespace: "ns", UID: "uid-1", Labels: map[string]string{"app": "web"},
	}}
	tests := []struct {
		name    string
		opts    []AdoptOption
		want    *corev1.Pod
		wantErr string
	}{{
		name: "default scheme",
		want: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			GenerateName: "web-", Namespace: "ns", Labels: map[string]string{"app": "web", OwnerKindLabel: "deployment.apps"},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "uid-1",
				Controller: new(true), BlockOwnerDeletion: new(true),
			}},
		}},
	}, {
		name:    "the caller's scheme replaces the default",
		opts:    []AdoptOption{OwnerScheme(runtime.NewScheme())},
		want:    &corev1.Pod{},
		wantErr: "adopt: find the kind of the owner web: no kind is registered",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &corev1.Pod{}
			err := Adopt(pod, owner, tt.opts...)
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.wantErr)) {
				t.Fatalf("Adopt() error = %v, want %q", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, pod); diff != "" {
				t.Errorf("pod -want +got:\n%s", diff)
			}
		})
	}
}
