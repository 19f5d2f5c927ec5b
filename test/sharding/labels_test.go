package sharding

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/pkg/kopftest"
)

// An owner label edited by hand to another live member's name moves the
// object into that member's cache, but starts nothing there (the grant
// names the owner): that member puts the label back, the object returns
// to its owner, and nothing ran for it on two replicas at once. The
// assigner never sees such an object, since a live member's label is on
// it.
func TestALabelEditedToAnotherMemberIsPutBack(t *testing.T) {
	kopftest.NoLeaks(t)
	r := newRing(t)
	r.start("a")
	r.start("b")
	names := r.createObjects(10)
	r.waitSettled(names, time.Minute)
	// A create handler still under way at the edit, or whose outcome is
	// not written yet, is stopped with the object and runs again (at
	// least once): the edit must not re-run one whose outcome is stored.
	r.waitHandled(names)
	owner, _, _ := r.owners()
	var name string
	for _, n := range names {
		if owner[n] == r.member("a") {
			name = n
			break
		}
	}
	if name == "" {
		t.Fatal("no object is a's; the test shows nothing")
	}
	creates := len(r.det.creates(name))

	obj := r.object(name)
	if err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: r.ns, Name: name}, obj); err != nil {
		t.Fatal(err)
	}
	edit := client.MergeFrom(obj.DeepCopy())
	labels := obj.GetLabels()
	labels[r.keys().Owner] = r.member("b")
	obj.SetLabels(labels)
	if err := env.Client.Patch(context.Background(), obj, edit); err != nil {
		t.Fatal(err)
	}
	kopftest.Eventually(t, "the label back on a's object", 30*time.Second, func() bool {
		now := r.object(name)
		if err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: r.ns, Name: name}, now); err != nil {
			t.Fatal(err)
		}
		return now.GetLabels()[r.keys().Owner] == r.member("a")
	})
	r.waitSettled(names, time.Minute)
	if got := r.det.creates(name); len(got) != creates {
		t.Errorf("the create handler of %s ran again, on %v", name, got[creates:])
	}
	if o := r.det.overlapping(); len(o) > 0 {
		t.Errorf("executions overlapped: %v", o)
	}
}
