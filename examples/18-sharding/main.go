// Command 18-sharding is an operator meant to run as several replicas of
// one Deployment that share the KopfExample objects (docs/sharding.md):
// with --shard-ring=NAME, each replica handles only the objects whose
// owner label names it, and the ring moves objects between replicas as
// they come and go. Its daemon says which replica runs it for which
// object, so the moves show in the logs.
//
// With --demo, it runs three replicas in this one process against the
// cluster in KUBECONFIG instead, and shows the objects move as a replica
// leaves and another joins (demo.go).
package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kopf-go/kopf/handlers"

	"github.com/kopf-go/kopf/pkg/cause"
)

// pingInterval is how often the daemon says where it runs.
const pingInterval = 5 * time.Second

func main() {
	if slices.Contains(os.Args[1:], "--demo") {
		args := slices.DeleteFunc(slices.Clone(os.Args[1:]), func(a string) bool { return a == "--demo" })
		if err := demo(args); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	id := identity()
	// The runner takes --shard-ring (and the rest of Kopf's command line).
	handlers.Main(registry(id), handlers.RunOptions{Options: handlers.Options{Identity: id}})
}

// identity names this replica: the pod's name in a Deployment (POD_ID,
// from the downward API), as the engine's default does. Outside a pod,
// the host and process id keep two replicas on one machine apart. The
// operator gets it explicitly so that the daemon can say it.
func identity() string {
	if pod := os.Getenv("POD_ID"); pod != "" {
		return pod
	}
	host, err := os.Hostname()
	if err != nil {
		host = "localhost"
	}
	return fmt.Sprintf("%s/%d", host, os.Getpid())
}

// registry has the handlers of the replica with the given identity: the
// create handler stores who created the object, and the daemon says who
// runs it, every few seconds.
func registry(identity string) *handlers.Registry {
	reg := handlers.NewRegistry()
	kex := handlers.ForKind(reg, "kopf.dev", "v1", "KopfExample")
	handlers.OnCreate(kex, "create_fn", func(ctx context.Context, obj *unstructured.Unstructured, c *cause.Change) (any, error) {
		// status.create_fn.message, which `kubectl get kopfexamples` shows.
		return map[string]any{"message": "created by " + identity}, nil
	})
	handlers.Daemon(kex, "where_fn", func(ctx context.Context, obj *unstructured.Unstructured, d *cause.Daemon) (any, error) {
		return nil, where(ctx, obj, d, identity)
	}, handlers.CancellationBackoff(5*time.Second)) // time to exit politely
	return reg
}

// where is the daemon: it runs on the object's owner only, and moves with
// the object. When the object moves to another replica, the owner asks
// the daemon to stop (the reason is OPERATOR_PAUSING; OPERATOR_EXITING
// when the owner itself stops) and hands the object over only after it
// has exited; the next owner starts it anew. d.Sleep wakes at the request,
// so the daemon exits well within its cancellation backoff, before its
// context would be cancelled: the reason says DAEMON_SIGNALLED, not
// DAEMON_CANCELLED.
func where(ctx context.Context, obj *unstructured.Unstructured, d *cause.Daemon, identity string) error {
	log := logr.FromContextOrDiscard(ctx)
	for {
		log.Info(fmt.Sprintf("%s runs the daemon of %s.", identity, obj.GetName()))
		if !d.Sleep(ctx, pingInterval) {
			log.Info(fmt.Sprintf("%s stops the daemon of %s (%s).", identity, obj.GetName(), d.StopReason().String()))
			return nil
		}
	}
}
