package main

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// goV4Main is the part of go/v4's cmd/main.go that init edits.
const goV4Main = `package main

import (
	"os"

	ctrl "sigs.k8s.io/controller-runtime"
	// +kubebuilder:scaffold:imports
)

func main() {
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{})
	if err != nil {
		os.Exit(1)
	}
	// +kubebuilder:scaffold:builder
}
`

var projectConfig = map[string]any{"repo": "example.com/demo", "domain": "example.com", "layout": []any{"go.kubebuilder.io/v4", "kopf.kopf.dev/v1-alpha"}, "version": "3"}

// TestInitThenCreateAPI goes through the commands as kubebuilder sends
// them, merging each response's files into the project.
func TestInitThenCreateAPI(t *testing.T) {
	project := map[string]string{
		"go.mod":      "module example.com/demo\n\ngo 1.26.0\n",
		"cmd/main.go": goV4Main,
		"Makefile":    "##@ Build\n",
		// A binary, as go/v4's make leaves in bin/: kubebuilder sends it
		// mangled, and the plugin must not write it back.
		"bin/controller-gen": "\x7fELF\xff\xfe",
	}
	resp, stderr := call(t, requestJSON(t, request{APIVersion: "v1alpha1", Command: "init", Universe: project, Config: projectConfig,
		Args: []string{"--domain", "example.com", "--repo", "example.com/demo", "--kopf-version", "v0.9.0"}}))
	if resp.Error {
		t.Fatalf("init: %v", resp.ErrorMsgs)
	}
	if _, ok := resp.Universe["bin/controller-gen"]; ok {
		t.Error("init writes bin/controller-gen back")
	}
	if !strings.Contains(resp.Universe["go.mod"], "require github.com/kopf-go/kopf v0.9.0\n") {
		t.Errorf("init's go.mod:\n%s", resp.Universe["go.mod"])
	}
	if !strings.Contains(stderr, "kopf.kopf.dev: kopf-go is wired into cmd/main.go") {
		t.Errorf("init's stderr:\n%s", stderr)
	}
	maps.Copy(project, resp.Universe)

	project["api/v1/widget_types.go"] = "package v1\n\ntype WidgetStatus struct {\n}\n"
	config := maps.Clone(projectConfig)
	config["resources"] = []any{map[string]any{"group": "apps", "domain": "example.com", "version": "v1", "kind": "Widget",
		"path": "example.com/demo/api/v1", "api": map[string]any{"crdVersion": "v1", "namespaced": true}}}
	resp, _ = call(t, requestJSON(t, request{APIVersion: "v1alpha1", Command: "create api", Universe: project, Config: config,
		Args: []string{"--group", "apps", "--version", "v1", "--kind", "Widget", "--resource", "--controller", "--timer"}}))
	if resp.Error {
		t.Fatalf("create api: %v", resp.ErrorMsgs)
	}
	want := []string{"api/v1/widget_types.go", "internal/kopf/widget_handlers.go", "internal/kopf/widget_handlers_test.go"}
	if diff := cmp.Diff(want, slices.Sorted(maps.Keys(resp.Universe))); diff != "" {
		t.Errorf("create api: files -want +got:\n%s", diff)
	}
	if !strings.Contains(resp.Universe["internal/kopf/widget_handlers.go"], `handlers.Timer(widgets, "widget_timer"`) {
		t.Errorf("create api --timer scaffolds no timer:\n%s", resp.Universe["internal/kopf/widget_handlers.go"])
	}
	maps.Copy(project, resp.Universe)

	resp, _ = call(t, requestJSON(t, request{APIVersion: "v1alpha1", Command: "create webhook", Universe: project, Config: config,
		Args: []string{"--group", "apps", "--version", "v1", "--kind", "Widget", "--mutating=false"}}))
	if resp.Error {
		t.Fatalf("create webhook: %v", resp.ErrorMsgs)
	}
	webhooks := resp.Universe["internal/kopf/widget_webhooks.go"]
	if !strings.Contains(webhooks, "OnValidate") || strings.Contains(webhooks, "OnMutate") {
		t.Errorf("create webhook --mutating=false:\n%s", webhooks)
	}
}

// TestEdit adds kopf-go to an existing project, and says to tidy go.mod.
func TestEdit(t *testing.T) {
	project := map[string]string{"go.mod": "module example.com/demo\n", "cmd/main.go": goV4Main}
	resp, stderr := call(t, requestJSON(t, request{APIVersion: "v1alpha1", Command: "edit", Universe: project, Config: projectConfig}))
	if resp.Error {
		t.Fatalf("edit: %v", resp.ErrorMsgs)
	}
	for _, file := range []string{"go.mod", "cmd/main.go", "internal/kopf/setup.go"} {
		if _, ok := resp.Universe[file]; !ok {
			t.Errorf("edit does not write %s", file)
		}
	}
	if !strings.Contains(stderr, "run `go mod tidy`") {
		t.Errorf("edit's stderr:\n%s", stderr)
	}
}
