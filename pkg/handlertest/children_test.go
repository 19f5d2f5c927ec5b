package handlertest_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kopf-go/kopf/pkg/cause"
	"github.com/kopf-go/kopf/pkg/handlertest"
)

func TestChild(t *testing.T) {
	cm := func(version, field string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "child", ResourceVersion: version}, Data: map[string]string{"field": field}}
	}
	changed := handlertest.Child(cause.ChildChanged, cm("1", "a"), cm("2", "b"), "data.field")
	if changed.Old != "a" || changed.New != "b" || len(changed.Diff) != 1 {
		t.Errorf("changed: old %v, new %v, diff %v; want a, b and one change", changed.Old, changed.New, changed.Diff)
	}
	whole := handlertest.Child(cause.ChildChanged, cm("1", "a"), cm("2", "a"), "")
	if len(whole.Diff) != 0 {
		t.Errorf("a new resourceVersion alone: diff %v, want none", whole.Diff)
	}
	deleted := handlertest.Child(cause.ChildDeleted, nil, cm("3", "c"), "")
	old, _ := deleted.Old.(map[string]any)
	if deleted.New != nil || old["data"].(map[string]any)["field"] != "c" || deleted.Body["data"].(map[string]any)["field"] != "c" {
		t.Errorf("deleted: old %v, new %v; want the last state, nil", deleted.Old, deleted.New)
	}
	created := handlertest.Child(cause.ChildCreated, cm("1", "x"), cm("1", "a"), "data.field")
	if created.Old != nil || created.New != "a" || created.Memo == nil {
		t.Errorf("created: old %v, new %v, memo %v; want nil, a, a memo", created.Old, created.New, created.Memo)
	}
}
