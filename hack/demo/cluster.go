package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// repoRoot finds the repository's root: the nearest directory upwards
// from the working directory with a go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find the working directory: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("find the repository: no go.mod above the working directory; run the demo from the repository")
		}
		dir = parent
	}
}

// envtestAssets returns the directory with kube-apiserver and etcd:
// KUBEBUILDER_ASSETS if set, else what hack/envtest-binaries.sh builds or
// finds in its cache.
func envtestAssets(ctx context.Context, root string) (string, error) {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir, nil
	}
	fmt.Println("==> Finding or building the control-plane binaries (the first time takes a few minutes)")
	cmd := exec.CommandContext(ctx, filepath.Join(root, "hack", "envtest-binaries.sh"))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("build the envtest binaries: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// exampleObject reads examples/obj.yaml.
func exampleObject(root string) (*unstructured.Unstructured, error) {
	data, err := os.ReadFile(filepath.Join(root, "examples", "obj.yaml"))
	if err != nil {
		return nil, fmt.Errorf("read the example object: %w", err)
	}
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(data, &obj.Object); err != nil {
		return nil, fmt.Errorf("parse the example object: %w", err)
	}
	if obj.GetNamespace() == "" {
		obj.SetNamespace("default")
	}
	return obj, nil
}

// eventsAbout lists the Events whose subject is the object, as one line each.
func eventsAbout(ctx context.Context, c client.Client, obj *unstructured.Unstructured) ([]string, error) {
	var list corev1.EventList
	err := c.List(ctx, &list, client.InNamespace(obj.GetNamespace()),
		client.MatchingFields{"involvedObject.uid": string(obj.GetUID())})
	if err != nil {
		return nil, fmt.Errorf("list the events: %w", err)
	}
	var out []string
	for _, e := range list.Items {
		out = append(out, fmt.Sprintf("%s %s: %s", e.Type, e.Reason, e.Message))
	}
	return out, nil
}
