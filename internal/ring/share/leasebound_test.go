package share

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// A ring member writes to objects only while no other member can have
// taken them over, and each write ends by then.
func TestLeaseBoundWrites(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	fc := clocktesting.NewFakeClock(now)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}}
	var deadlines []time.Duration
	c := fake.NewClientBuilder().WithObjects(cm).WithInterceptorFuncs(interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			if d, ok := ctx.Deadline(); ok {
				deadlines = append(deadlines, time.Until(d))
			}
			return c.Patch(ctx, obj, p, opts...)
		},
	}).Build()
	var until time.Time
	bound := &leaseBound{Client: c, until: func() time.Time { return until }, clock: fc}
	p := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"x":"y"}}}`))

	if err := bound.Patch(context.Background(), cm.DeepCopy(), p); !errors.Is(err, errMembershipExpired) {
		t.Errorf("a write before joining = %v, want %v", err, errMembershipExpired)
	}
	if err := bound.Status().Patch(context.Background(), cm.DeepCopy(), p); !errors.Is(err, errMembershipExpired) {
		t.Errorf("a status write before joining = %v, want %v", err, errMembershipExpired)
	}
	until = now.Add(3 * time.Second)
	if err := bound.Patch(context.Background(), cm.DeepCopy(), p); err != nil {
		t.Fatalf("a write while the membership holds = %v", err)
	}
	if len(deadlines) != 1 || deadlines[0] > 3*time.Second || deadlines[0] < 2*time.Second {
		t.Errorf("the write's deadline is %v away, want the membership's 3 s", deadlines)
	}
	fc.Step(3 * time.Second)
	if err := bound.Patch(context.Background(), cm.DeepCopy(), p); !errors.Is(err, errMembershipExpired) {
		t.Errorf("a write after the membership may have expired = %v, want %v", err, errMembershipExpired)
	}
	if len(deadlines) != 1 {
		t.Errorf("%d writes reached the API server, want 1", len(deadlines))
	}
}
