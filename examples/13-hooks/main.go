// Command 13-hooks shows the operator-wide handlers: two startup handlers
// (one of them retried), a cleanup handler, a login handler, two probes;
// and an on-event handler for pods that starts one background task per
// pod, which the cleanup handler stops.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/kopf-go/kopf/handlers"

	"github.com/kopf-go/kopf/pkg/cause"
	"github.com/kopf-go/kopf/pkg/failure"
)

func main() {
	// tasks owns the pods' background tasks. The cleanup handler stops
	// them and waits for them; should the operator stop without running
	// it (a failed startup), they are stopped and waited for here.
	tasks := &podTasks{}
	reg := handlers.NewRegistry()
	handlers.OnStartup(reg, "startup_fn_simple", tasks.startupSimple)
	handlers.OnStartup(reg, "startup_fn_retried", startupRetried)
	handlers.OnCleanup(reg, "cleanup_fn", tasks.cleanup)
	handlers.OnLogin(reg, "login_fn", login, handlers.Errors(failure.ErrorsPermanent))
	handlers.OnProbe(reg, "tasks_count", tasks.tasksCount)
	handlers.OnProbe(reg, "monitored_objects", tasks.monitoredObjects)
	pods := handlers.For[*corev1.Pod](reg)
	handlers.OnEvent(pods, "pod_task", tasks.podTask)

	err := handlers.Run(ctrl.SetupSignalHandler(), reg, os.Args[1:], handlers.RunOptions{})
	tasks.stop()
	tasks.wait()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// startupSimple prepares the registry of tasks before anything is watched.
func (t *podTasks) startupSimple(ctx context.Context, a *cause.Activity) error {
	logr.FromContextOrDiscard(ctx).Info("Initialising the task-lock...")
	t.init()
	return nil
}

// startupRetried fails temporarily three times, a second apart, then
// succeeds; the operator does not start watching until it has.
func startupRetried(ctx context.Context, a *cause.Activity) error {
	if a.Retry < 3 {
		return handlers.Temporary(errors.New(fmt.Sprintf("Going to succeed in %ds", 3-a.Retry)), time.Second)
	}
	logr.FromContextOrDiscard(ctx).Info("Starting retried...")
	return nil
}

// cleanup runs when the operator stops, after its handlers have stopped:
// it asks every pod's task to stop and waits until they have.
func (t *podTasks) cleanup(ctx context.Context, a *cause.Activity) error {
	log := logr.FromContextOrDiscard(ctx)
	log.Info("Cleaning up...")
	// The line comes first: a task told to stop may say it has finished
	// before this goroutine gets to log.
	log.Info("All pod-tasks are requested to stop...")
	t.stop()
	t.wait()
	return nil
}

// login connects the runner to the cluster in $KUBECONFIG (or
// ~/.kube/config), after a pause that stands for a slow identity provider.
// Its errors are permanent: the operator does not start without a login.
func login(ctx context.Context, a *cause.Activity) (*rest.Config, error) {
	fmt.Println("Logging in in 2s...")
	select {
	case <-time.After(2 * time.Second):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("load the kubeconfig: %w", err)
	}
	return cfg, nil
}

// tasksCount is a probe: the number of tasks.
func (t *podTasks) tasksCount(ctx context.Context, a *cause.Activity) (any, error) {
	return t.count(), nil
}

// monitoredObjects is a probe: the pods with tasks, by namespace, sorted.
func (t *podTasks) monitoredObjects(ctx context.Context, a *cause.Activity) (any, error) {
	return t.byNamespace(), nil
}

// podTask sees every event of every pod, and starts a task for each pod
// it sees for the first time.
func (t *podTasks) podTask(ctx context.Context, pod *corev1.Pod, e *cause.Event) (any, error) {
	t.start(pod.Namespace, pod.Name, logr.FromContextOrDiscard(ctx))
	return nil, nil
}
