package handlertest_test

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kopf-go/kopf/handlers"
	"github.com/kopf-go/kopf/pkg/admission"
	"github.com/kopf-go/kopf/pkg/cause"
	"github.com/kopf-go/kopf/pkg/handlertest"
)

// An update handler, tested with the cause the engine would give it: Old,
// New and Diff come from the two objects' essences.
func ExampleUpdate() {
	onUpdate := func(ctx context.Context, cm *corev1.ConfigMap, c *cause.Change) (any, error) {
		for _, item := range c.Diff {
			c.Patch.SetAnnotation("last-change", string(item.Op)+" "+item.Field.String())
		}
		return nil, nil
	}
	old := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"}, Data: map[string]string{"colour": "blue"}}
	cm := old.DeepCopy()
	cm.Data["colour"] = "green"

	c := handlertest.Update(old, cm)
	if _, err := onUpdate(handlertest.Context(nil), cm, c); err != nil {
		fmt.Println(err)
	}
	fmt.Println(c.Reason, c.Diff)
	fmt.Println(handlertest.Patch(c))
	// Output:
	// update (('change', ('data', 'colour'), 'blue', 'green'),)
	// map[metadata:map[annotations:map[last-change:change data.colour]]]
}

// A daemon, tested with a stop the test controls: Sleep returns false as
// soon as the test stops it, as when the engine does.
func ExampleNewDaemon() {
	daemon := func(ctx context.Context, pod *corev1.Pod, d *cause.Daemon) (any, error) {
		for d.Sleep(ctx, time.Millisecond) {
			// one round of the daemon's work
		}
		d.Patch.SetStatus("stoppedBecause", d.StopReason().String())
		return nil, nil
	}
	d := handlertest.NewDaemon(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}})
	done := make(chan error, 1)
	go func() {
		_, err := daemon(context.Background(), &corev1.Pod{}, d.Cause)
		done <- err
	}()
	d.Stop(cause.StopResourceDeleted)
	fmt.Println(<-done, d.Patch())
	// Output:
	// <nil> map[status:map[stoppedBecause:RESOURCE_DELETED]]
}

// A validating handler, tested with the request the API server would
// send for the operation.
func ExampleAdmission() {
	validate := func(ctx context.Context, cm *corev1.ConfigMap, r *admission.Request) error {
		if _, ok := cm.Data["forbidden"]; ok {
			return admission.Error{Message: "the key 'forbidden' is forbidden", Code: 422}
		}
		r.Warn("looks fine")
		return nil
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Data: map[string]string{"forbidden": "x"}}
	fmt.Println(validate(context.Background(), cm, handlertest.Admission(admission.Create, nil, cm)))
	delete(cm.Data, "forbidden")
	r := handlertest.Admission(admission.Update, cm, cm)
	fmt.Println(validate(context.Background(), cm, r), r.Warnings)
	// Output:
	// the key 'forbidden' is forbidden
	// <nil> [looks fine]
}

// A handler's Events, recorded instead of posted.
func ExampleRecordEvents() {
	onCreate := func(ctx context.Context, cm *corev1.ConfigMap, c *cause.Change) (any, error) {
		handlers.PostInfo(ctx, cm, "Seen", "a new settings map")
		return nil, nil
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: "ns"}}
	events := &handlertest.Events{}
	if _, err := onCreate(handlertest.Context(nil, handlertest.RecordEvents(events)), cm, handlertest.Create(cm)); err != nil {
		fmt.Println(err)
	}
	for _, e := range events.Posted() {
		fmt.Println(e.Type, e.Reason, e.Message, e.Kind, e.Namespace+"/"+e.Name)
	}
	// Output:
	// Normal Seen a new settings map ConfigMap ns/settings
}
