// Command 16-indexing keeps two indices of pods in memory, reads them in
// two probes, and every 5 seconds writes the running pods of the
// namespaces default and kube-system into each KopfExample's status.
package main

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kopf-go/kopf/handlers"

	"github.com/kopf-go/kopf/pkg/cause"
	"github.com/kopf-go/kopf/pkg/indexing"
)

// podKey is what Kopf's example keys the pods by, a (namespace, name)
// tuple; labelKey is a (label, value) tuple. Arrays are comparable, so
// they serve as map keys where Kopf uses tuples.
type (
	podKey   = [2]string
	labelKey = [2]string
)

// reported are the namespaces whose running pods the timer reports.
var reported = []string{"kube-system", "default"}

func main() {
	reg := handlers.NewRegistry()
	pods := handlers.For[*corev1.Pod](reg)
	handlers.Index(pods, "is_running", isRunning)
	handlers.Index(pods, "by_label", byLabel)
	handlers.OnProbe(reg, "pod_count", podCount)
	handlers.OnProbe(reg, "pod_names", podNames)
	kex := handlers.ForKind(reg, "kopf.dev", "v1", "KopfExample")
	handlers.Timer(kex, "intervalled", intervalled, handlers.Interval(5*time.Second))
	handlers.Main(reg, handlers.RunOptions{})
}

// isRunning indexes every pod under its namespace and name: whether it
// runs. The index reads {(ns, name): [true]}, one value per pod.
func isRunning(ctx context.Context, pod *corev1.Pod, c *cause.Change) (any, error) {
	return map[podKey]bool{{pod.Namespace, pod.Name}: pod.Status.Phase == corev1.PodRunning}, nil
}

// byLabel indexes every pod's name under each of its labels and values:
// {(label, value): [names of the pods with it]}.
func byLabel(ctx context.Context, pod *corev1.Pod, c *cause.Change) (any, error) {
	out := map[labelKey]string{}
	for label, value := range pod.Labels {
		out[labelKey{label, value}] = pod.Name
	}
	return out, nil
}

// podCount is a probe: the number of pods in the index.
func podCount(ctx context.Context, a *cause.Activity) (any, error) {
	return a.Indices.Get("is_running").Len(), nil
}

// podNames is a probe: the names of the pods in the index, sorted.
func podNames(ctx context.Context, a *cause.Activity) (any, error) {
	names := []string{}
	for _, key := range a.Indices.Get("is_running").Keys() {
		names = append(names, key.(podKey)[1])
	}
	slices.Sort(names)
	return names, nil
}

// intervalled prints the labels index and writes the running pods of the
// reported namespaces into status.running-pods as "namespace::name".
func intervalled(ctx context.Context, obj *unstructured.Unstructured, d *cause.Daemon) (any, error) {
	byLabel := d.Indices.Get("by_label")
	labels := map[labelKey][]any{}
	for _, key := range byLabel.Keys() {
		labels[key.(labelKey)] = byLabel.Get(key)
	}
	fmt.Println(labels) // fmt sorts the keys

	isRunning := d.Indices.Get("is_running")
	running := []any{}
	for _, key := range sortedPodKeys(isRunning) {
		if slices.Contains(reported, key[0]) && slices.Contains(isRunning.Get(key), any(true)) {
			running = append(running, key[0]+"::"+key[1])
		}
	}
	d.Patch.SetStatus("running-pods", running)
	return nil, nil
}

// sortedPodKeys returns the keys of a pod index in the order of namespace
// and name.
func sortedPodKeys(ix *indexing.Index) []podKey {
	var keys []podKey
	for _, key := range ix.Keys() {
		keys = append(keys, key.(podKey))
	}
	slices.SortFunc(keys, func(a, b podKey) int {
		return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1]))
	})
	return keys
}
