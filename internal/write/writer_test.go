package write

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/kopf-go/kopf/internal/clients"
	"github.com/kopf-go/kopf/pkg/patch"
)

// patchCall is what the API server saw of one patch's context.
type patchCall struct {
	Err error
	// Bounded: the context has a deadline, at most Timeout away.
	Bounded bool
}

// TestCommitOutlivesCancellation: a cycle whose context is cancelled after
// its handlers ran (the operator stops or freezes) still writes their
// outcome, with a context of its own that the write timeout bounds.
func TestCommitOutlivesCancellation(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", Finalizers: []string{"other/keep"}}}
	var calls []patchCall
	fc := fake.NewClientBuilder().WithObjects(cm).WithInterceptorFuncs(interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			deadline, ok := ctx.Deadline()
			calls = append(calls, patchCall{Err: ctx.Err(), Bounded: ok && time.Until(deadline) <= Timeout})
			return c.Patch(ctx, obj, p, opts...)
		},
	}).Build()
	w := New(corev1.SchemeGroupVersion.WithKind("ConfigMap"), "x.kopf.dev/finalizer", clients.NewCurrent(fc), FixedProbe(false), Timeout)
	obj := &corev1.ConfigMap{}
	if err := fc.Get(context.Background(), client.ObjectKeyFromObject(cm), obj); err != nil {
		t.Fatal(err)
	}
	p := patch.New()
	p.SetLabel("handled", "yes")

	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the stop came after the handlers ran
	conflict, err := w.Commit(ctx, logr.Discard(), obj, p, AddFinalizer)
	if err != nil || conflict {
		t.Fatalf("commit() = %v, %v; want no conflict, no error", conflict, err)
	}
	if diff := cmp.Diff([]patchCall{{Bounded: true}}, calls, cmp.Comparer(func(a, b error) bool { return errors.Is(a, b) })); diff != "" {
		t.Errorf("the patches' contexts -want +got:\n%s", diff)
	}
	got := &corev1.ConfigMap{}
	if err := fc.Get(context.Background(), client.ObjectKeyFromObject(cm), got); err != nil {
		t.Fatal(err)
	}
	type written struct {
		Labels     map[string]string
		Finalizers []string
	}
	want := written{Labels: map[string]string{"handled": "yes"}, Finalizers: []string{"other/keep", "x.kopf.dev/finalizer"}}
	if diff := cmp.Diff(want, written{got.Labels, got.Finalizers}); diff != "" {
		t.Errorf("the object as written -want +got:\n%s", diff)
	}
}

// TestCommitIsBounded: a write that hangs (an API server that does not
// answer) ends when the writer's timeout is over, even though the cycle's
// own context was cancelled long before.
func TestCommitIsBounded(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}}
	fc := fake.NewClientBuilder().WithObjects(cm).WithInterceptorFuncs(interceptor.Funcs{
		Patch: func(ctx context.Context, _ client.WithWatch, _ client.Object, _ client.Patch, _ ...client.PatchOption) error {
			<-ctx.Done() // hangs until the writer gives up
			return ctx.Err()
		},
	}).Build()
	w := New(corev1.SchemeGroupVersion.WithKind("ConfigMap"), "x.kopf.dev/finalizer", clients.NewCurrent(fc), FixedProbe(false), time.Millisecond)
	p := patch.New()
	p.SetLabel("handled", "yes")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := w.Commit(ctx, logr.Discard(), cm.DeepCopy(), p, KeepFinalizer)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("commit() = %v, want the write timeout's %v", err, context.DeadlineExceeded)
	}
}
