package ring

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// lead holds the Lease, written as held at renewed, until ctx ends,
// renewing it every retry period, and tells won of a leading context. It
// stops leading (cancels that context) when it has not renewed the Lease
// for the renew deadline since the last renewal began, which is before
// any other candidate counts the record expired (it waits a lease
// duration from a later moment, when it saw the renewal), or when it
// finds that another candidate wrote the Lease. It returns once ctx has
// ended, with the Lease as last written, or nil if it is someone else's.
func (e *Elector) lead(ctx context.Context, held *coordinationv1.Lease, renewed time.Time, won chan<- context.Context) *coordinationv1.Lease {
	leading, resign := context.WithCancel(ctx)
	defer resign()
	tick := e.c.Clock.NewTicker(e.c.RetryPeriod)
	defer tick.Stop()
	deadline := e.c.Clock.NewTimer(renewed.Add(e.c.RenewDeadline).Sub(e.c.Clock.Now()))
	defer func() { deadline.Stop() }()
	e.c.Logger.V(1).Info("Acquired the election Lease.", "lease", e.c.Name)
	select {
	case won <- leading:
	case <-ctx.Done():
		return held
	}
	stepDown := func(why string) {
		e.c.Logger.Info("Stopped leading: "+why, "lease", e.c.Name)
		resign()
		<-ctx.Done()
	}
	for {
		select {
		case <-ctx.Done():
			return held
		case <-deadline.C():
			stepDown(fmt.Sprintf("the election Lease was not renewed for %s.", e.c.RenewDeadline))
			return held
		case <-tick.C():
			began := e.c.Clock.Now()
			left := renewed.Add(e.c.RenewDeadline).Sub(began)
			if left <= 0 {
				stepDown(fmt.Sprintf("the election Lease was not renewed for %s.", e.c.RenewDeadline))
				return held
			}
			lease, err := e.renew(ctx, held, began, left)
			switch {
			case err == nil:
				held, renewed = lease, began
				deadline.Stop()
				deadline = e.c.Clock.NewTimer(renewed.Add(e.c.RenewDeadline).Sub(e.c.Clock.Now()))
			case err == errLost:
				stepDown("another candidate holds the election Lease.")
				return nil
			case ctx.Err() == nil:
				e.c.Logger.Error(err, "Could not renew the election Lease; trying again.", "lease", e.c.Name)
			}
		}
	}
}

// renew writes the Lease with a fresh renew time, begun at began, within
// left (a timeout by the elector's clock, which may not be the real one).
// A Lease that changed under the leader is read again: if it is still the
// leader's (an edit of something else), it is renewed as read; if not, it
// is lost. A deleted Lease is created anew, unless another candidate did
// that first.
func (e *Elector) renew(ctx context.Context, held *coordinationv1.Lease, began time.Time, left time.Duration) (*coordinationv1.Lease, error) {
	ctx, cancel := context.WithTimeout(ctx, left)
	defer cancel()
	now := metav1.NewMicroTime(began)
	lease, err := e.leases.Update(ctx, e.claimed(held.DeepCopy(), now), metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		fresh := e.claimed(held.DeepCopy(), now)
		fresh.ResourceVersion = ""
		lease, err = e.leases.Create(ctx, fresh, metav1.CreateOptions{})
	}
	if isRace(err) {
		var fresh *coordinationv1.Lease
		if fresh, err = e.leases.Get(ctx, e.c.Name, metav1.GetOptions{}); err != nil {
			return nil, fmt.Errorf("read the election Lease again: %w", err)
		}
		if holder(fresh) != e.c.Identity {
			return nil, errLost
		}
		lease, err = e.leases.Update(ctx, e.claimed(fresh, now), metav1.UpdateOptions{})
	}
	if err != nil {
		return nil, fmt.Errorf("renew the election Lease: %w", err)
	}
	return lease, nil
}

// release writes the Lease, if it is still this leader's, as client-go's
// elector releases one: no holder and a lease duration of one second,
// which any candidate may acquire at once. It is called once ctx has
// ended, and takes up to a renew deadline of its own.
func (e *Elector) release(ctx context.Context, held *coordinationv1.Lease) {
	if held == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.c.RenewDeadline)
	defer cancel()
	for attempt := 0; ; attempt++ {
		now := metav1.NewMicroTime(e.c.Clock.Now())
		lease := held.DeepCopy()
		lease.Spec.HolderIdentity = ptr.To("")
		lease.Spec.LeaseDurationSeconds = ptr.To(int32(1))
		lease.Spec.AcquireTime, lease.Spec.RenewTime = &now, &now
		_, err := e.leases.Update(ctx, lease, metav1.UpdateOptions{})
		switch {
		case err == nil:
			e.c.Logger.V(1).Info("Released the election Lease.", "lease", e.c.Name)
			return
		case apierrors.IsNotFound(err):
			return
		case !apierrors.IsConflict(err) || attempt >= 2:
			e.c.Logger.Error(err, "Could not release the election Lease; others take it when it expires.", "lease", e.c.Name)
			return
		}
		if held, err = e.leases.Get(ctx, e.c.Name, metav1.GetOptions{}); err != nil {
			if !apierrors.IsNotFound(err) {
				e.c.Logger.Error(err, "Could not read the election Lease to release it; others take it when it expires.", "lease", e.c.Name)
			}
			return
		}
		if holder(held) != e.c.Identity {
			return // someone else's now: not this leader's to release
		}
	}
}
