package share

import (
	"context"
	"errors"
	"time"

	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// errMembershipExpired is what a ring member's writes to objects return
// once its membership may have expired in the eyes of the others.
var errMembershipExpired = errors.New("this replica's ring membership has expired or not begun: no writes to objects")

// leaseBound bounds every write of a ring member by its membership: a
// write may not start after the member's Lease could have expired for the
// others, and its context ends then, so that no write of this member can
// land after another member has taken the object over (a handover's
// writes are guarded by resourceVersions; a dead member's are not).
type leaseBound struct {
	client.Client
	until func() time.Time
	clock clock.PassiveClock
}

// do runs one write with the membership's deadline, or refuses it.
func (l *leaseBound) do(ctx context.Context, write func(context.Context) error) error {
	until := l.until()
	left := until.Sub(l.clock.Now())
	if until.IsZero() || left <= 0 {
		return errMembershipExpired
	}
	ctx, cancel := context.WithTimeout(ctx, left)
	defer cancel()
	return write(ctx)
}

func (l *leaseBound) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	return l.do(ctx, func(ctx context.Context) error { return l.Client.Create(ctx, obj, opts...) })
}

func (l *leaseBound) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	return l.do(ctx, func(ctx context.Context) error { return l.Client.Update(ctx, obj, opts...) })
}

func (l *leaseBound) Patch(ctx context.Context, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
	return l.do(ctx, func(ctx context.Context) error { return l.Client.Patch(ctx, obj, p, opts...) })
}

func (l *leaseBound) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	return l.do(ctx, func(ctx context.Context) error { return l.Client.Delete(ctx, obj, opts...) })
}

func (l *leaseBound) DeleteAllOf(ctx context.Context, obj client.Object, opts ...client.DeleteAllOfOption) error {
	return l.do(ctx, func(ctx context.Context) error { return l.Client.DeleteAllOf(ctx, obj, opts...) })
}

func (l *leaseBound) Status() client.SubResourceWriter { return l.SubResource("status") }

func (l *leaseBound) SubResource(name string) client.SubResourceClient {
	return &leaseBoundSub{SubResourceClient: l.Client.SubResource(name), l: l}
}

// leaseBoundSub bounds the writes of a subresource (the status) alike.
type leaseBoundSub struct {
	client.SubResourceClient
	l *leaseBound
}

func (s *leaseBoundSub) Create(ctx context.Context, obj, sub client.Object, opts ...client.SubResourceCreateOption) error {
	return s.l.do(ctx, func(ctx context.Context) error { return s.SubResourceClient.Create(ctx, obj, sub, opts...) })
}

func (s *leaseBoundSub) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	return s.l.do(ctx, func(ctx context.Context) error { return s.SubResourceClient.Update(ctx, obj, opts...) })
}

func (s *leaseBoundSub) Patch(ctx context.Context, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
	return s.l.do(ctx, func(ctx context.Context) error { return s.SubResourceClient.Patch(ctx, obj, p, opts...) })
}
