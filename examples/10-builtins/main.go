// Command 10-builtins handles a built-in kind, Pods, as Kopf's example
// does: every Pod gets 30 seconds to live, counted from its creation or
// from the operator's start, after which the operator deletes it; a Pod
// deleted earlier has its countdown cancelled. Pods in the system
// namespaces (kube-*) are left alone.
package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kopf-go/kopf/handlers"

	"github.com/kopf-go/kopf/pkg/cause"
)

// lifetime is how long a Pod may live.
const lifetime = 30 * time.Second

func main() {
	k := newKillers(lifetime)
	reg := handlers.NewRegistry()
	handlers.OnCleanup(reg, "stop_killers", k.stopAll)

	pods := handlers.For[*corev1.Pod](reg)
	handlers.OnResume(pods, "pod_in_sight", k.podInSight, notSystem)
	handlers.OnCreate(pods, "pod_in_sight", k.podInSight, notSystem)
	handlers.OnDelete(pods, "pod_deleted", k.podDeleted, notSystem)
	handlers.Main(reg, handlers.RunOptions{})
}

// notSystem keeps the handlers away from the system namespaces, so that
// the operator neither kills the cluster itself nor puts its finalizer on
// the cluster's own Pods.
var notSystem = handlers.When(func(pod *corev1.Pod, c *cause.Change) bool {
	return !strings.HasPrefix(pod.Namespace, "kube-")
})

// killers owns the Pod killers: one goroutine per Pod, which waits out the
// Pod's lifetime and then deletes it. A killer ends when it has deleted
// its Pod, when the Pod is deleted first, or when the operator stops; the
// cleanup handler waits for all of them, so none outlives the operator.
type killers struct {
	lifetime time.Duration
	// ctx is the parent of every killer's context; stopAll cancels it.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	running map[types.NamespacedName]*killer
	stopped bool
}

// killer is one running killer.
type killer struct {
	cancel context.CancelFunc
	done   chan struct{}
}

func newKillers(lifetime time.Duration) *killers {
	ctx, cancel := context.WithCancel(context.Background())
	return &killers{lifetime: lifetime, ctx: ctx, cancel: cancel, running: map[types.NamespacedName]*killer{}}
}

// podInSight starts the Pod's killer, for Pods that are created and for
// those that exist when the operator starts. A Pod that has a killer
// already keeps it.
func (k *killers) podInSight(ctx context.Context, pod *corev1.Pod, c *cause.Change) (any, error) {
	key := types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
	log := logr.FromContextOrDiscard(ctx)

	k.mu.Lock()
	defer k.mu.Unlock()
	if k.stopped {
		return nil, nil // the cleanup handler ran: nothing may start now
	}
	if _, ok := k.running[key]; ok {
		return nil, nil
	}
	kctx, cancel := context.WithCancel(k.ctx)
	kl := &killer{cancel: cancel, done: make(chan struct{})}
	k.running[key] = kl
	k.wg.Add(1)
	go k.kill(kctx, log, handlers.Client(ctx), key, kl)
	return nil, nil
}

// podDeleted cancels the Pod's killer, if it has one, and waits for it to
// end.
func (k *killers) podDeleted(ctx context.Context, pod *corev1.Pod, c *cause.Change) (any, error) {
	k.mu.Lock()
	kl, ok := k.running[types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}]
	k.mu.Unlock()
	if !ok {
		return nil, nil
	}
	kl.cancel()
	select {
	case <-kl.done:
		return nil, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// kill waits out the Pod's lifetime and deletes it, unless ctx is
// cancelled first. It logs with the logger of the handler that started
// it, so its lines name the Pod.
func (k *killers) kill(ctx context.Context, log logr.Logger, c client.Client, key types.NamespacedName, kl *killer) {
	defer k.wg.Done()
	defer close(kl.done)
	defer k.forget(key, kl)

	log.Info(fmt.Sprintf("=== Pod killing happens in %s.", k.lifetime))
	timer := time.NewTimer(k.lifetime)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-ctx.Done():
		log.Info("=== Pod killing is cancelled!")
		return
	}

	log.Info("=== Pod killing happens NOW!")
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	if err := c.Delete(ctx, pod); client.IgnoreNotFound(err) != nil {
		log.Error(err, "Failed to kill the pod.")
	}
}

// forget removes the killer from the running ones, unless another one has
// taken its place.
func (k *killers) forget(key types.NamespacedName, kl *killer) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.running[key] == kl {
		delete(k.running, key)
	}
}

// stopAll cancels every killer when the operator stops, and waits until
// they have all ended, which is at once: a cancelled killer only logs.
func (k *killers) stopAll(ctx context.Context, a *cause.Activity) error {
	k.mu.Lock()
	k.stopped = true
	k.mu.Unlock()
	k.cancel()
	k.wg.Wait()
	return nil
}
