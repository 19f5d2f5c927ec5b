package scaffold

import (
	"go/parser"
	"go/token"
	"maps"
	"strings"
	"testing"
)

// goV4Main is the part of go/v4's cmd/main.go that the plugin edits.
const goV4Main = `package main

import (
	"os"

	ctrl "sigs.k8s.io/controller-runtime"
	// +kubebuilder:scaffold:imports
)

var setupLog = ctrl.Log.WithName("setup")

func main() {
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{})
	if err != nil {
		os.Exit(1)
	}

	// +kubebuilder:scaffold:builder

	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		os.Exit(1)
	}
}
`

// goV4Makefile has the parts of go/v4's Makefile that the plugin edits
// or must leave alone: the test target, which gets its control plane from
// setup-envtest, test-e2e, the Build section, and setup-envtest's target.
const goV4Makefile = `##@ Development

.PHONY: test
test: manifests generate fmt vet setup-envtest ## Run tests.
	KUBEBUILDER_ASSETS="$(shell "$(ENVTEST)" use $(ENVTEST_K8S_VERSION) --bin-dir "$(LOCALBIN)" -p path)" go test $$(go list ./... | grep -v /e2e) -coverprofile cover.out

.PHONY: test-e2e
test-e2e: manifests ## Run the e2e tests.
	go test -tags=e2e ./test/e2e/

##@ Build

build: ## Build manager binary.
	go build -o bin/manager cmd/main.go

##@ Dependencies

.PHONY: setup-envtest
setup-envtest: envtest ## Download the envtest binaries.
	@"$(ENVTEST)" use $(ENVTEST_K8S_VERSION) --bin-dir "$(LOCALBIN)" -p path
`

const goV4Types = `package v1

// WidgetSpec defines the desired state of Widget
type WidgetSpec struct{}

// WidgetStatus defines the observed state of Widget.
type WidgetStatus struct {
	Conditions []string ` + "`json:\"conditions,omitempty\"`" + `
}

// Widget is the Schema for the widgets API
type Widget struct {
	Spec   WidgetSpec   ` + "`json:\"spec\"`" + `
	Status WidgetStatus ` + "`json:\"status,omitzero\"`" + `
}
`

// goV4Project is a project as go/v4 leaves it after init.
func goV4Project() map[string]string {
	return map[string]string{
		"go.mod":                  "module example.com/demo\n\ngo 1.26.0\n\nrequire sigs.k8s.io/controller-runtime v0.25.0\n",
		"cmd/main.go":             goV4Main,
		"Makefile":                goV4Makefile,
		"hack/boilerplate.go.txt": "/*\nCopyright YEAR.\n*/",
	}
}

func project() Project { return Project{Repo: "example.com/demo", Domain: "example.com"} }

// initialised is a project after init, with the Widget API that go/v4's
// create api adds.
func initialised(t *testing.T) (map[string]string, Project) {
	t.Helper()
	u := goV4Project()
	r, err := Init(Input{Universe: u, Project: project(), Year: 2026}, InitOptions{KopfVersion: "v0.1.0"})
	if err != nil {
		t.Fatal(err)
	}
	maps.Copy(u, r.Files)
	u["api/v1/widget_types.go"] = goV4Types
	p := project()
	p.Resources = []Resource{{Group: "apps", Domain: "example.com", Version: "v1", Kind: "Widget", Path: "example.com/demo/api/v1",
		API: &struct {
			Namespaced bool `json:"namespaced"`
		}{Namespaced: true}}}
	return u, p
}

// mustParse fails the test unless the file is Go.
func mustParse(t *testing.T, name, src string) {
	t.Helper()
	if _, err := parser.ParseFile(token.NewFileSet(), name, src, parser.AllErrors); err != nil {
		t.Errorf("%s does not parse: %v\n%s", name, err, src)
	}
}

// mustContain fails the test for each missing piece.
func mustContain(t *testing.T, name, s string, pieces ...string) {
	t.Helper()
	for _, p := range pieces {
		if !strings.Contains(s, p) {
			t.Errorf("%s lacks %q:\n%s", name, p, s)
		}
	}
}
