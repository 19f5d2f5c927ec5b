package scaffold

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kopf-go/kopf/config/crd"
	"github.com/kopf-go/kopf/internal/envtestbin"
)

func TestInit(t *testing.T) {
	r, err := Init(Input{Universe: goV4Project(), Project: project(), Year: 2026}, InitOptions{KopfVersion: "v0.2.0", KopfReplace: "../kopf-go"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"Makefile", "cmd/main.go",
		"config/crd/kopf/clusterkopfpeerings.yaml", "config/crd/kopf/kopfpeerings.yaml", "config/crd/kopf/kustomization.yaml",
		"go.mod", "hack/envtest-binaries.sh", "internal/kopf/setup.go", "internal/kopf/suite_test.go",
	}
	if diff := cmp.Diff(want, slices.Sorted(maps.Keys(r.Files))); diff != "" {
		t.Fatalf("Init() files -want +got:\n%s", diff)
	}
	mustContain(t, "go.mod", r.Files["go.mod"], "\nrequire github.com/kopf-go/kopf v0.2.0\n", "\nreplace github.com/kopf-go/kopf => ../kopf-go\n")
	mustParse(t, "main.go", r.Files["cmd/main.go"])
	mustContain(t, "main.go", r.Files["cmd/main.go"], `"example.com/demo/internal/kopf"`, "if err := kopf.Setup(mgr); err != nil {")
	mustContain(t, "Makefile", r.Files["Makefile"], "kopf-test: manifests generate fmt vet ##", `bash hack/envtest-binaries.sh`, "go test ./internal/kopf/...",
		"test: manifests generate fmt vet ## Run tests.\n\tassets=\"$$(bash hack/envtest-binaries.sh)\" && KUBEBUILDER_ASSETS=\"$$assets\" go test $$(go list ./... | grep -v /e2e)")
	for file, tmpl := range map[string][]string{
		"internal/kopf/setup.go": {"package kopf", "func NewRegistry() *handlers.Registry {", "func Setup(mgr ctrl.Manager, namespaces ...string) error {",
			"+kubebuilder:rbac:groups=\"\",resources=events,verbs=create\n",
			"+kubebuilder:rbac:groups=kopf.dev,resources=kopfpeerings;clusterkopfpeerings,verbs=list;watch;patch\n"},
		"internal/kopf/suite_test.go": {"var env *kopftest.Env", "func TestMain(m *testing.M) {", `filepath.Join("..", "..", "config", "crd", "bases")`},
	} {
		mustParse(t, file, r.Files[file])
		mustContain(t, file, r.Files[file], append(tmpl, "/*\nCopyright 2026.\n*/\n\n")...)
	}
	if r.Files["hack/envtest-binaries.sh"] != string(envtestbin.Script) {
		t.Error("hack/envtest-binaries.sh is not the library's script")
	}
	peering, _ := crd.Files.ReadFile("kopfpeerings.yaml")
	if r.Files["config/crd/kopf/kopfpeerings.yaml"] != string(peering) {
		t.Error("config/crd/kopf/kopfpeerings.yaml is not the library's CRD")
	}
	mustContain(t, "kustomization.yaml", r.Files["config/crd/kopf/kustomization.yaml"], "resources:\n  - clusterkopfpeerings.yaml\n  - kopfpeerings.yaml\n")
}

func TestInitNamespacedProject(t *testing.T) {
	p := project()
	p.Namespaced = true
	r, err := Init(Input{Universe: goV4Project(), Project: p}, InitOptions{KopfVersion: "v0.1.0"})
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, "main.go", r.Files["cmd/main.go"], `kopf.Setup(mgr, strings.Split(watchNamespace, ",")...)`)
	if strings.Contains(r.Files["go.mod"], "replace") {
		t.Error("go.mod has a replace without --kopf-replace")
	}
}

// TestInitTwice is what `edit` does in a project that has kopf-go: only
// kopf-go's own files are written again, unchanged.
func TestInitTwice(t *testing.T) {
	u := goV4Project()
	in := Input{Universe: u, Project: project()}
	first, err := Init(in, InitOptions{KopfVersion: "v0.1.0"})
	if err != nil {
		t.Fatal(err)
	}
	maps.Copy(u, first.Files)
	u["internal/kopf/setup.go"] += "// edited by the user\n"
	again, err := Init(in, InitOptions{KopfVersion: "v0.1.0"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"config/crd/kopf/clusterkopfpeerings.yaml", "config/crd/kopf/kopfpeerings.yaml", "config/crd/kopf/kustomization.yaml", "hack/envtest-binaries.sh"}
	if diff := cmp.Diff(want, slices.Sorted(maps.Keys(again.Files))); diff != "" {
		t.Errorf("Init() again: files -want +got:\n%s", diff)
	}
	for file, content := range again.Files {
		if content != u[file] {
			t.Errorf("Init() again changed %s", file)
		}
	}
}

func TestInitRefusals(t *testing.T) {
	for _, missing := range []string{"go.mod", "cmd/main.go"} {
		u := goV4Project()
		delete(u, missing)
		_, err := Init(Input{Universe: u, Project: project()}, InitOptions{KopfVersion: "v0.1.0"})
		if err == nil || !strings.Contains(err.Error(), "chain it after go/v4") {
			t.Errorf("Init() without %s: error = %v", missing, err)
		}
	}
	if _, err := Init(Input{Universe: goV4Project(), Project: project()}, InitOptions{KopfVersion: "v0.1.0", KopfReplace: "kopf"}); err == nil {
		t.Error("Init() with a bad --kopf-replace: want an error")
	}
	u := goV4Project()
	u["Makefile"] = strings.Replace(u["Makefile"], "KUBEBUILDER_ASSETS=", "ASSETS=", 1)
	if _, err := Init(Input{Universe: u, Project: project()}, InitOptions{KopfVersion: "v0.1.0"}); err == nil ||
		!strings.Contains(err.Error(), "the Makefile's test target does not set KUBEBUILDER_ASSETS from setup-envtest") {
		t.Errorf("Init() with a test target of another shape: error = %v", err)
	}
}

// TestInitWithoutTestTarget: a Makefile without `make test` has nothing
// that needs setup-envtest; init adds kopf-test and says so.
func TestInitWithoutTestTarget(t *testing.T) {
	u := goV4Project()
	u["Makefile"] = "##@ Build\n\nbuild:\n\tgo build ./...\n"
	r, err := Init(Input{Universe: u, Project: project()}, InitOptions{KopfVersion: "v0.1.0"})
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, "Makefile", r.Files["Makefile"], "\nkopf-test: ", "\nbuild:\n")
	if !slices.Contains(r.Notes, "the Makefile has no test target; `make kopf-test` runs the kopf-go tests") {
		t.Errorf("Init() notes: %q", r.Notes)
	}
}
