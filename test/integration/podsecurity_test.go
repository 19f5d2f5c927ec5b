package integration

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// The Pods of config/deploy's Deployments are admitted in a namespace that
// enforces Pod Security "restricted" (the kube-apiserver's PodSecurity
// admission plugin, which envtest leaves on); without any one of the
// settings that standard asks for, the same Pod is refused, naming it. The
// first of those rows is the manifests as they were before they set a
// seccomp profile. No kubelet runs the Pods: they are created with a
// server-side dry run, which runs admission all the same.
func TestDeploymentPodsMeetPodSecurityRestricted(t *testing.T) {
	ns := restrictedNamespace(t)
	tests := []struct {
		name string
		edit func(*corev1.PodSpec)
		// refused is what the refusal names; empty: admitted.
		refused string
	}{
		{"as shipped", func(*corev1.PodSpec) {}, ""},
		{"without a seccomp profile", func(s *corev1.PodSpec) { s.SecurityContext.SeccompProfile = nil }, "seccompProfile"},
		{"allowing privilege escalation", func(s *corev1.PodSpec) { s.Containers[0].SecurityContext.AllowPrivilegeEscalation = nil }, "allowPrivilegeEscalation"},
		{"keeping the capabilities", func(s *corev1.PodSpec) { s.Containers[0].SecurityContext.Capabilities = nil }, "unrestricted capabilities"},
		{"maybe as root", func(s *corev1.PodSpec) { s.SecurityContext.RunAsNonRoot = nil }, "runAsNonRoot"},
	}
	for _, file := range []string{"namespaced.yaml", "sharded.yaml"} {
		template := deploymentTemplate(t, file)
		for _, tt := range tests {
			t.Run(file+"/"+tt.name, func(t *testing.T) {
				pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "operator", Labels: template.Labels},
					Spec: *template.Spec.DeepCopy()}
				tt.edit(&pod.Spec)
				err := env.Client.Create(context.Background(), pod, client.DryRunAll)
				switch {
				case tt.refused == "" && err != nil:
					t.Errorf("the Pod is refused: %v", err)
				case tt.refused == "":
				case err == nil:
					t.Errorf("the Pod is admitted, want it refused for %s", tt.refused)
				case !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `violates PodSecurity "restricted:latest"`) ||
					!strings.Contains(err.Error(), tt.refused):
					t.Errorf("the Pod is refused with %v, want a Pod Security refusal naming %s", err, tt.refused)
				}
			})
		}
	}
}

// restrictedNamespace creates a namespace that enforces Pod Security
// "restricted".
func restrictedNamespace(t *testing.T) string {
	t.Helper()
	name := env.Namespace(t)
	labels := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{`+
		`"pod-security.kubernetes.io/enforce":"restricted","pod-security.kubernetes.io/enforce-version":"latest"}}}`))
	if err := env.Client.Patch(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, labels); err != nil {
		t.Fatal(err)
	}
	return name
}

// deploymentTemplate is the Pod template of the Deployment of a manifest
// of config/deploy.
func deploymentTemplate(t *testing.T, file string) corev1.PodTemplateSpec {
	t.Helper()
	for _, obj := range deployManifests(t, file, "operators") {
		if obj.GetKind() == "Deployment" {
			var d appsv1.Deployment
			if err := runtimeConvert(obj, &d); err != nil {
				t.Fatal(err)
			}
			return d.Spec.Template
		}
	}
	t.Fatalf("%s has no Deployment", file)
	return corev1.PodTemplateSpec{}
}

// Every container of config/deploy's Deployments asks for CPU and memory
// and is limited in both (docs/deploying.md#resources).
func TestDeploymentPodsSetResources(t *testing.T) {
	for _, file := range []string{"namespaced.yaml", "sharded.yaml"} {
		for _, c := range deploymentTemplate(t, file).Spec.Containers {
			for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
				if _, ok := c.Resources.Requests[name]; !ok {
					t.Errorf("%s: the container %s requests no %s", file, c.Name, name)
				}
				if _, ok := c.Resources.Limits[name]; !ok {
					t.Errorf("%s: the container %s has no %s limit", file, c.Name, name)
				}
			}
		}
	}
}

// config/deploy's NetworkPolicy for webhooks is accepted by the API
// server, selects the Deployments' Pods, and opens the port the webhook
// server listens on by default.
func TestWebhooksNetworkPolicy(t *testing.T) {
	ns := env.Namespace(t)
	objs := deployManifests(t, "webhooks-networkpolicy.yaml", ns)
	if len(objs) != 1 {
		t.Fatalf("webhooks-networkpolicy.yaml has %d objects, want 1", len(objs))
	}
	var policy networkingv1.NetworkPolicy
	if err := runtimeConvert(objs[0], &policy); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(context.Background(), policy.DeepCopy(), client.DryRunAll); err != nil {
		t.Fatalf("the API server refuses the NetworkPolicy: %v", err)
	}
	selector, err := metav1.LabelSelectorAsSelector(&policy.Spec.PodSelector)
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{"namespaced.yaml", "sharded.yaml"} {
		if pod := deploymentTemplate(t, file); !selector.Matches(labels.Set(pod.Labels)) {
			t.Errorf("the NetworkPolicy's selector %s does not select the Pods of %s (%v)", selector, file, pod.Labels)
		}
	}
	var ports []int
	for _, rule := range policy.Spec.Ingress {
		for _, p := range rule.Ports {
			ports = append(ports, p.Port.IntValue())
		}
	}
	if diff := cmp.Diff([]int{webhook.DefaultPort}, ports); diff != "" {
		t.Errorf("the NetworkPolicy's ports -want +got:\n%s", diff)
	}
}
