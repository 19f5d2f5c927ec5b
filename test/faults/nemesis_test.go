package faults

import (
	"context"
	"errors"
	"fmt"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"syscall"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/test/faults/faultlog"
	"github.com/kopf-go/kopf/test/faults/proxy"
)

// terminationGrace is how long a SIGTERMed replica has before SIGKILL,
// as a kubelet's default terminationGracePeriodSeconds.
const terminationGrace = 30 * time.Second

// errNotInjected marks the errors of faults that did not happen: their
// victim, its Lease or their object went away first. Where faults come
// at random, such a fault is skipped; where each must happen, it fails
// the test.
var errNotInjected = errors.New("the fault was not injected")

// notInjected wraps err with errNotInjected.
func notInjected(err error) error { return fmt.Errorf("%w: %w", errNotInjected, err) }

// Each nemesis below blocks until its fault is over and logged. Faults
// that hit one replica take it as the victim; the fault's actor is the
// victim's process when the fault began, whose objects should move.

// partition cuts the member off through its proxy for hold, then heals.
func (r *ring) partition(ctx context.Context, m *member, mode proxy.Mode, hold time.Duration) error {
	kind := faultlog.PartitionRefuse
	if mode == proxy.Hang {
		kind = faultlog.PartitionHang
	}
	id := r.begin(ctx, faultlog.Entry{Kind: kind, Replica: m.PodID(), Actor: m.Actor(), Note: "slow " + m.slow.String()})
	if err := m.proxy.Set(mode); err != nil {
		r.log.Fail(id, err.Error())
		return notInjected(err)
	}
	sleep(ctx, hold)
	err := m.proxy.Set(proxy.Pass)
	r.log.End(id, "healed")
	return err
}

// pause stops the member's process for hold (longer than a lease), then
// lets it go on. The pause is logged from after the SIGSTOP to before
// the SIGCONT, so that no record of the victim falls inside it.
func (r *ring) pause(ctx context.Context, m *member, hold time.Duration) error {
	actor, err := m.Signal(syscall.SIGSTOP, false)
	if err != nil {
		return notInjected(err)
	}
	id := r.begin(ctx, faultlog.Entry{Kind: faultlog.Pause, Replica: m.PodID(), Actor: actor, Note: "slow " + m.slow.String()})
	sleep(ctx, hold)
	r.log.End(id, "SIGCONT")
	_, err = m.Signal(syscall.SIGCONT, false)
	return err
}

// kill kills the member and restarts it, with the same POD_ID, once
// restartAt (given the moment of the kill and the member's lease expiry
// as its Lease shows it before the kill) has come. The fault is logged
// from the kill, with the actor it killed.
func (r *ring) kill(ctx context.Context, m *member, kind string, restartAt func(killed, expiry time.Time) time.Time) error {
	expiry, err := r.leaseExpiry(ctx, m)
	if err != nil {
		return notInjected(err)
	}
	killed := time.Now()
	actor, err := m.Kill()
	if err != nil {
		return notInjected(err)
	}
	id := r.begin(ctx, faultlog.Entry{Kind: kind, Replica: m.PodID(), Actor: actor, Start: killed.UnixNano(),
		Note: "slow " + m.slow.String()})
	sleep(ctx, time.Until(restartAt(killed, expiry)))
	restarted, err := m.Restart()
	if err != nil {
		// The report never names an empty member.
		r.log.End(id, fmt.Sprintf("not restarted %s after the kill: %v", time.Since(killed).Round(time.Millisecond), err))
		return err
	}
	r.log.End(id, fmt.Sprintf("restarted as %s %s after the kill, %s after the lease's expiry",
		restarted, time.Since(killed).Round(time.Millisecond), time.Since(expiry).Round(time.Millisecond)))
	return nil
}

// terminate sends SIGTERM and waits for the exit, SIGKILLing the member
// after terminationGrace as a kubelet does. It does not come back.
func (r *ring) terminate(ctx context.Context, m *member, kind string) error {
	at := time.Now()
	actor, exited, err := m.Term()
	if err != nil {
		return notInjected(err)
	}
	id := r.begin(ctx, faultlog.Entry{Kind: kind, Replica: m.PodID(), Actor: actor, Start: at.UnixNano(),
		Note: "slow " + m.slow.String()})
	grace := time.NewTimer(terminationGrace)
	defer grace.Stop()
	select {
	case <-exited:
		r.log.End(id, "exited")
	case <-grace.C:
		_, _ = m.Kill()
		r.log.End(id, "SIGKILLed after the termination grace")
	case <-ctx.Done():
		_, _ = m.Kill()
		r.log.End(id, "SIGKILLed: the test ends")
	}
	return nil
}

// deleteLease deletes the member's Lease by hand, as an administrator
// might; the fault is the moment of the deletion.
func (r *ring) deleteLease(ctx context.Context, m *member) error {
	lease, err := r.lease(ctx, m)
	if err != nil {
		return notInjected(err)
	}
	id := r.begin(ctx, faultlog.Entry{Kind: faultlog.LeaseDeleted, Replica: m.PodID(), Actor: m.Actor(), Note: "slow " + m.slow.String()})
	if err := fixtures.env.Client.Delete(ctx, lease, client.Preconditions{UID: &lease.UID}); err != nil {
		r.log.Fail(id, err.Error())
		return notInjected(err)
	}
	r.log.End(id, "deleted "+lease.Name)
	return nil
}

// editLabel sets an object's owner label by hand to another live
// member's name; the victim is the object's owner before.
func (r *ring) editLabel(ctx context.Context, owner *member, object string, to *member) error {
	toName, err := r.memberName(ctx, to)
	if err != nil {
		return notInjected(err)
	}
	id := r.begin(ctx, faultlog.Entry{Kind: faultlog.LabelEdited, Replica: owner.PodID(), Actor: owner.Actor(),
		Object: r.ns + "/" + object, Note: fmt.Sprintf("slow %s; to %s (%s)", owner.slow, to.PodID(), to.Actor())})
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, r.names.ownerLabel, toName)
	obj := newObject(r.ns, object)
	if err := fixtures.env.Client.Patch(ctx, obj, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		r.log.Fail(id, err.Error())
		return notInjected(err)
	}
	// The edit starts nobody (the overlaps show that); the ring puts the
	// label right: back to the granted member, or to one the ring grants
	// the object to since. The fault lasts until then.
	edited := time.Now()
	right := func() bool {
		err := fixtures.env.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		if apierrors.IsNotFound(err) {
			return true
		}
		return err == nil && obj.GetLabels()[r.names.ownerLabel] == obj.GetAnnotations()[r.names.grantAnnotation]
	}
	if err := poll(ctx, labelRepairBound, right); err != nil {
		r.log.End(id, "not put right")
		return fmt.Errorf("the owner label of %s edited by hand was not put right within %s: %w", object, labelRepairBound, err)
	}
	r.log.End(id, fmt.Sprintf("put right after %s", time.Since(edited).Round(time.Millisecond)))
	return nil
}

// labelRepairBound bounds the wait for the ring to put a hand-edited
// owner label right: the assigner may itself be under a fault, and a new
// one is elected within two lease durations.
const labelRepairBound = time.Minute

// join adds a member; the fault lasts until its Lease is there.
func (r *ring) join(ctx context.Context, podID string, slow time.Duration) (*member, error) {
	id := r.begin(ctx, faultlog.Entry{Kind: faultlog.Join, Replica: podID, Note: "slow " + slow.String()})
	m, err := r.add(podID, slow, false)
	if err != nil {
		r.log.Fail(id, err.Error())
		return nil, notInjected(err)
	}
	err = poll(ctx, time.Minute, func() bool { _, err := r.memberName(ctx, m); return err == nil })
	r.log.End(id, "joined as "+m.Actor())
	return m, err
}

// lease is the member's Lease.
func (r *ring) lease(ctx context.Context, m *member) (*coordinationv1.Lease, error) {
	name, err := r.memberName(ctx, m)
	if err != nil {
		return nil, err
	}
	lease := &coordinationv1.Lease{}
	err = fixtures.env.Client.Get(ctx, client.ObjectKey{Namespace: r.leaseNS, Name: r.names.memberLeasePrefix + name}, lease)
	return lease, err
}

// leaseExpiry is when the member's lease runs out unless renewed: a lease
// duration after its last renewal as the Lease shows it.
func (r *ring) leaseExpiry(ctx context.Context, m *member) (time.Time, error) {
	lease, err := r.lease(ctx, m)
	if err != nil {
		return time.Time{}, err
	}
	renewed := lease.Spec.RenewTime
	if renewed == nil {
		renewed = &metav1.MicroTime{Time: time.Now()}
	}
	return renewed.Add(r.timing.effective().lease), nil
}

// memberName is the member's name in the ring, from its Lease.
func (r *ring) memberName(ctx context.Context, m *member) (string, error) {
	names, err := r.memberNames(ctx)
	if err != nil {
		return "", err
	}
	for name, podID := range names {
		if podID == m.PodID() {
			return name, nil
		}
	}
	return "", fmt.Errorf("%s has no Lease in the ring", m.PodID())
}

// sleep waits for d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// poll checks cond every 100 ms until it holds, ctx ends or timeout.
func poll(ctx context.Context, timeout time.Duration, cond func() bool) error {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return errors.New("timed out")
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		sleep(ctx, 100*time.Millisecond)
	}
	return nil
}
