package integration

import (
	"context"
	"errors"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kopf-go/kopf/handlers"

	"github.com/kopf-go/kopf/pkg/cause"
)

// The standalone runner of a ring member that loses its membership
// returns ErrShardMembershipLost at once, as controller-runtime skips the
// graceful stop on lost leadership: it does not wait for a handler that
// ignores its cancellation (which a graceful stop would, up to its
// grace), so that the process exits before others may take its objects
// over. Default durations: the member notices its deleted Lease at its
// next renewal, 5 s later at the most.
func TestShardedRunnerReturnsAtOnceWhenFenced(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	kubeconfig, err := env.KubeconfigFile(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	reg, kind := kex()
	running, release := make(chan struct{}, 1), make(chan struct{})
	handlers.OnCreate(kind, "stubborn", func(ctx context.Context, obj *unstructured.Unstructured, c *cause.Change) (any, error) {
		running <- struct{}{}
		<-release // ignores its cancellation
		return nil, nil
	})
	done := make(chan error, 1)
	go func() {
		done <- handlers.Run(context.Background(), reg,
			[]string{"--standalone", "--namespace", ns, "--kubeconfig", kubeconfig, "--shard-ring", "runner"}, handlers.RunOptions{})
	}()
	defer func() {
		close(release) // the manager then ends its stop in the background
	}()
	create(t, exampleObject(t, ns))
	select {
	case <-running:
	case err := <-done:
		t.Fatalf("the runner stopped early: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the handler did not run")
	}

	members, err := handlers.ShardMembers(context.Background(), env.Client, ns, "runner")
	if err != nil || len(members) != 1 {
		t.Fatalf("the ring's members: %v, %v; want one", members, err)
	}
	for member := range members {
		lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kopf-shard-runner-" + member}}
		if err := env.Client.Delete(context.Background(), lease); err != nil {
			t.Fatal(err)
		}
	}
	deleted := time.Now()
	select {
	case err := <-done:
		if !errors.Is(err, handlers.ErrShardMembershipLost) {
			t.Errorf("the runner returned %v, want ErrShardMembershipLost", err)
		}
		// The next renewal is 5 s after the last one at the most.
		if took := time.Since(deleted); took > 7*time.Second {
			t.Errorf("the runner returned %s after the Lease was deleted, want at the next renewal", took)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the runner did not return while its handler ignored the cancellation")
	}
}
