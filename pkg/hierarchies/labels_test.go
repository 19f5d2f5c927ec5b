package hierarchies

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// newDeployment returns a typed Deployment whose template has the given
// labels.
func newDeployment(own, template map[string]string) *appsv1.Deployment {
	replicas := int32(2)
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: "d", Labels: own},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "d"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: template}, Spec: podSpec()},
		},
	}
}

// newCronJob returns an unstructured CronJob with an empty job template,
// the object of Kopf's nested-label tests.
func newCronJob(labels map[string]any) *unstructured.Unstructured {
	meta := map[string]any{}
	if labels != nil {
		meta["labels"] = labels
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "batch/v1", "kind": "CronJob", "metadata": meta,
		"spec": map[string]any{"schedule": "* * * * *", "jobTemplate": map[string]any{}},
	}}
}

func TestLabel(t *testing.T) {
	labels := map[string]string{"label": "new-value", "other": "other-value"}
	tests := []struct {
		name  string
		child Object
		opts  []LabelOption
		want  Object
	}{{
		name:  "typed child without labels",
		child: newPod(metav1.ObjectMeta{}),
		want:  newPod(metav1.ObjectMeta{Labels: map[string]string{"label": "new-value", "other": "other-value"}}),
	}, {
		name:  "unstructured child without metadata",
		child: newUnstructuredPod(nil),
		want:  newUnstructuredPod(map[string]any{"labels": map[string]any{"label": "new-value", "other": "other-value"}}),
	}, {
		name:  "typed child: existing values are kept",
		child: newPod(metav1.ObjectMeta{Labels: map[string]string{"label": "old-value", "mine": "x"}}),
		want:  newPod(metav1.ObjectMeta{Labels: map[string]string{"label": "old-value", "mine": "x", "other": "other-value"}}),
	}, {
		name:  "typed child: forced overwrites",
		child: newPod(metav1.ObjectMeta{Labels: map[string]string{"label": "old-value", "mine": "x"}}),
		opts:  []LabelOption{Forced()},
		want:  newPod(metav1.ObjectMeta{Labels: map[string]string{"label": "new-value", "mine": "x", "other": "other-value"}}),
	}, {
		name:  "unstructured child: existing values are kept",
		child: newUnstructuredPod(map[string]any{"labels": map[string]any{"label": "old-value"}}),
		want:  newUnstructuredPod(map[string]any{"labels": map[string]any{"label": "old-value", "other": "other-value"}}),
	}, {
		name:  "unstructured child: forced overwrites",
		child: newUnstructuredPod(map[string]any{"labels": map[string]any{"label": "old-value"}}),
		opts:  []LabelOption{Forced()},
		want:  newUnstructuredPod(map[string]any{"labels": map[string]any{"label": "new-value", "other": "other-value"}}),
	}, {
		name:  "typed deployment without nested: the template is untouched",
		child: newDeployment(nil, map[string]string{"app": "d"}),
		want:  newDeployment(map[string]string{"label": "new-value", "other": "other-value"}, map[string]string{"app": "d"}),
	}, {
		name:  "typed deployment, nested template: added, existing kept",
		child: newDeployment(map[string]string{"label": "old-value"}, map[string]string{"app": "d", "label": "old-template-value"}),
		opts:  []LabelOption{Nested("spec.template")},
		want: newDeployment(
			map[string]string{"label": "old-value", "other": "other-value"},
			map[string]string{"app": "d", "label": "old-template-value", "other": "other-value"}),
	}, {
		name:  "typed deployment, nested template, forced",
		child: newDeployment(map[string]string{"label": "old-value"}, map[string]string{"app": "d", "label": "old-template-value"}),
		opts:  []LabelOption{Nested("spec.template"), Forced()},
		want: newDeployment(
			map[string]string{"label": "new-value", "other": "other-value"},
			map[string]string{"app": "d", "label": "new-value", "other": "other-value"}),
	}, {
		name:  "typed deployment, a template without labels gets them",
		child: newDeployment(nil, nil),
		opts:  []LabelOption{Nested("spec.template", "spec.unexistent")},
		want: newDeployment(
			map[string]string{"label": "new-value", "other": "other-value"},
			map[string]string{"label": "new-value", "other": "other-value"}),
	}, {
		name:  "typed pod: no template there, none is made",
		child: newPod(metav1.ObjectMeta{}),
		opts:  []LabelOption{Nested("spec.template")},
		want:  newPod(metav1.ObjectMeta{Labels: map[string]string{"label": "new-value", "other": "other-value"}}),
	}, {
		name:  "typed cronjob: a nil pointer on the way is not there",
		child: &batchv1.CronJob{},
		opts:  []LabelOption{Nested("spec.jobTemplate.spec.template.spec.affinity")},
		want:  &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"label": "new-value", "other": "other-value"}}},
	}, {
		name:  "typed cronjob: the job template, as Kopf's kubernetes-model tests",
		child: &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"label": "old-value"}}},
		opts:  []LabelOption{Nested("spec.jobTemplate")},
		want: &batchv1.CronJob{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"label": "old-value", "other": "other-value"}},
			Spec: batchv1.CronJobSpec{JobTemplate: batchv1.JobTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"label": "new-value", "other": "other-value"}},
			}},
		},
	}, {
		name:  "unstructured cronjob, nested job template, not forced",
		child: newCronJob(map[string]any{"label": "old-value"}),
		opts:  []LabelOption{Nested("spec.jobTemplate", "spec.unexistent")},
		want: func() Object {
			u := newCronJob(map[string]any{"label": "old-value", "other": "other-value"})
			u.Object["spec"].(map[string]any)["jobTemplate"] = map[string]any{"metadata": map[string]any{
				"labels": map[string]any{"label": "new-value", "other": "other-value"},
			}}
			return u
		}(),
	}, {
		name:  "unstructured cronjob, nested job template, forced",
		child: newCronJob(map[string]any{"label": "old-value"}),
		opts:  []LabelOption{Nested("spec.jobTemplate"), Forced()},
		want: func() Object {
			u := newCronJob(map[string]any{"label": "new-value", "other": "other-value"})
			u.Object["spec"].(map[string]any)["jobTemplate"] = map[string]any{"metadata": map[string]any{
				"labels": map[string]any{"label": "new-value", "other": "other-value"},
			}}
			return u
		}(),
	}, {
		name: "unstructured: null and non-object templates are skipped, null metadata is replaced",
		child: &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
			"null": nil, "text": "abc", "list": []any{}, "nullmeta": map[string]any{"metadata": nil},
		}}},
		opts: []LabelOption{Nested("spec.null", "spec.text", "spec.list", "spec.text.deeper", "spec.nullmeta")},
		want: &unstructured.Unstructured{Object: map[string]any{
			"metadata": map[string]any{"labels": map[string]any{"label": "new-value", "other": "other-value"}},
			"spec": map[string]any{
				"null": nil, "text": "abc", "list": []any{},
				"nullmeta": map[string]any{"metadata": map[string]any{"labels": map[string]any{"label": "new-value", "other": "other-value"}}},
			},
		}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for range 2 { // the second call must change nothing
				if err := Label(tt.child, labels, tt.opts...); err != nil {
					t.Fatalf("Label() error = %v", err)
				}
			}
			if diff := cmp.Diff(tt.want, tt.child); diff != "" {
				t.Errorf("child -want +got:\n%s", diff)
			}
		})
	}
}

// TestLabelNothing checks that no labels change nothing: no empty maps
// appear, nested or not.
func TestLabelNothing(t *testing.T) {
	for _, child := range []Object{newPod(metav1.ObjectMeta{}), newCronJob(nil), newDeployment(nil, nil)} {
		want := child.DeepCopyObject()
		if err := Label(child, nil, Nested("spec.template", "spec.jobTemplate"), Forced()); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, child); diff != "" {
			t.Errorf("%T -want +got:\n%s", child, diff)
		}
	}
}

// TestLabelDoesNotShareMaps checks that the caller's label map and the
// maps of shallow copies stay as they were.
func TestLabelDoesNotShareMaps(t *testing.T) {
	own := map[string]string{"mine": "x"}
	child := newPod(metav1.ObjectMeta{Labels: own})
	labels := map[string]string{"label": "value"}
	if err := Label(child, labels); err != nil {
		t.Fatal(err)
	}
	child.Labels["added-later"] = "y"
	if diff := cmp.Diff(map[string]string{"mine": "x"}, own); diff != "" {
		t.Errorf("the child's old map -want +got:\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"label": "value"}, labels); diff != "" {
		t.Errorf("the given labels -want +got:\n%s", diff)
	}
}
