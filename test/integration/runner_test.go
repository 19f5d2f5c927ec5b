package integration

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kopf-go/kopf/handlers"

	"github.com/kopf-go/kopf/pkg/cause"
)

// The standalone runner takes Kopf's command line, serves the given
// namespace, and returns nil (exit code 0) when its context ends.
func TestStandaloneRunner(t *testing.T) {
	checkLeaks(t)
	ns := env.Namespace(t)
	other := env.Namespace(t)
	kubeconfig, err := env.KubeconfigFile(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	reg, kind := kex()
	var seen calls
	handlers.OnCreate(kind, "create_fn", func(ctx context.Context, obj *unstructured.Unstructured, c *cause.Change) (any, error) {
		seen.add(c)
		return map[string]any{"namespace": obj.GetNamespace()}, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- handlers.Run(ctx, reg, []string{"--standalone", "--namespace", ns, "--kubeconfig", kubeconfig, "--verbose"}, handlers.RunOptions{})
	}()
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			cancel()
			<-done
		}
	})

	create(t, exampleObject(t, other))
	create(t, exampleObject(t, ns))
	eventually(t, "the served namespace is handled", func() bool {
		select {
		case err := <-done:
			stopped = true
			t.Fatalf("the runner stopped early: %v", err)
		default:
		}
		got, _, _ := unstructured.NestedString(get(t, ns, "kopf-example-1").Object, "status", "create_fn", "namespace")
		return got == ns
	})
	cancel()
	select {
	case err := <-done:
		stopped = true
		if err != nil {
			t.Errorf("the runner returned %v after a graceful stop, want nil", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the runner did not stop")
	}
	if calls := seen.all(); len(calls) != 1 {
		t.Errorf("%d calls, want 1: the other namespace is not served", len(calls))
	}
	if _, ok := get(t, other, "kopf-example-1").Object["status"]; ok {
		t.Error("an object outside the served namespace was handled")
	}
}
