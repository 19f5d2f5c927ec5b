// Package plugin tests the kubebuilder plugin (cmd/kubebuilder-kopf) end
// to end: the real kubebuilder, built from the Go module proxy, scaffolds
// a project with go/v4 and the plugin chained, and the project's own
// `make test` then runs its tests, go/v4's and kopf-go's, against a
// control plane built from source.
package plugin

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/kopf-go/kopf/test/testenv"
)

// kubebuilderVersion is the kubebuilder the plugin is tested with.
const kubebuilderVersion = "v4.16.0"

// pluginKey is the plugin's name/version, from the directories it is
// installed in.
const pluginKey = "kopf.kopf.dev/v1-alpha"

func TestKubebuilderProject(t *testing.T) {
	root := testenv.Root()
	cache := cacheDir(t)
	kubebuilder := buildKubebuilder(t, cache)
	plugins := installPlugin(t, root)

	dir := filepath.Join(t.TempDir(), "demo")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// The project finds its control plane itself (through the script that
	// init writes), as on a user's machine: KUBEBUILDER_ASSETS is not
	// passed on.
	env := append(without(os.Environ(), "KUBEBUILDER_ASSETS"),
		"EXTERNAL_PLUGINS_PATH="+plugins,
		// The project's tools (controller-gen) are kept across runs.
		"LOCALBIN="+filepath.Join(cache, "bin"),
		"GOWORK=off",
	)
	run := func(what string, name string, args ...string) string {
		t.Helper()
		return runIn(t, dir, env, what, name, args...)
	}

	// kopf-go is not on the module proxy: --kopf-replace points go.mod at
	// this checkout, so that go/v4's `go mod tidy` after init finds it.
	run("kubebuilder init", kubebuilder, "init", "--plugins", "go/v4,"+pluginKey,
		"--domain", "example.com", "--repo", "example.com/demo", "--kopf-replace", root)
	project := readFile(t, dir, "PROJECT")
	for _, key := range []string{"- go.kubebuilder.io/v4", "- " + pluginKey} {
		if !strings.Contains(project, key) {
			t.Errorf("PROJECT's layout lacks %s:\n%s", key, project)
		}
	}
	if help := run("kubebuilder create api --help", kubebuilder, "create", "api", "--help"); !strings.Contains(help, "--daemon") {
		t.Errorf("create api --help does not offer --daemon:\n%s", help)
	}

	// No --plugins: the chain comes from PROJECT.
	run("kubebuilder create api", kubebuilder, "create", "api", "--group", "apps", "--version", "v1", "--kind", "Widget",
		"--resource", "--controller", "--daemon", "--timer")
	run("kubebuilder create webhook", kubebuilder, "create", "webhook", "--plugins", pluginKey,
		"--group", "apps", "--version", "v1", "--kind", "Widget")
	for _, file := range []string{"internal/kopf/setup.go", "internal/kopf/suite_test.go", "internal/kopf/widget_handlers.go",
		"internal/kopf/widget_handlers_test.go", "internal/kopf/widget_webhooks.go", "hack/envtest-binaries.sh",
		"config/crd/kopf/kopfpeerings.yaml", "config/crd/kopf/clusterkopfpeerings.yaml"} {
		readFile(t, dir, file)
	}

	run("make manifests", "make", "manifests")
	if crd := readFile(t, dir, "config/crd/bases/apps.example.com_widgets.yaml"); !strings.Contains(crd, "x-kubernetes-preserve-unknown-fields: true") {
		t.Errorf("the Widget CRD drops the handlers' results from status:\n%s", crd)
	}
	checkManagerRole(t, readFile(t, dir, "config/rbac/role.yaml"))
	run("go build", "go", "build", "./...")

	// edit repeats init's work; in a project that has kopf-go, it leaves
	// the files that go/v4 wrote and init edited as they are.
	before := map[string]string{}
	for _, file := range []string{"Makefile", "go.mod", "cmd/main.go"} {
		before[file] = readFile(t, dir, file)
	}
	run("kubebuilder edit", kubebuilder, "edit", "--plugins", pluginKey)
	for file, content := range before {
		if readFile(t, dir, file) != content {
			t.Errorf("kubebuilder edit changed %s:\n%s", file, readFile(t, dir, file))
		}
	}

	// go/v4's own `make test`, as a user and their CI run it: the
	// controller's ginkgo suite and the kopf-go tests, against the control
	// plane that the script builds through the module proxy alone.
	// GOFLAGS=-v has go test name the tests that passed.
	out := runIn(t, dir, append(env, "GOFLAGS=-v"), "make test", "make", "test")
	for _, want := range []string{
		"bash hack/envtest-binaries.sh",
		"--- PASS: TestControllers", "ok  \texample.com/demo/internal/controller",
		"--- PASS: TestWidgetHandlers", "ok  \texample.com/demo/internal/kopf",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("make test's output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "setup-envtest") {
		t.Errorf("make test installs or runs setup-envtest, which needs more than the module proxy:\n%s", out)
	}
}

// checkManagerRole checks the rules that controller-gen made of the
// plugin's markers in the manager's role: the engine's, with exactly the
// verbs it uses (docs/kubebuilder-plugin.md#rbac).
func checkManagerRole(t *testing.T, data string) {
	t.Helper()
	var role rbacv1.ClusterRole
	if err := yaml.Unmarshal([]byte(data), &role); err != nil {
		t.Fatalf("read config/rbac/role.yaml: %v", err)
	}
	// verbs are those of every rule on the resource.
	verbs := func(group, resource string) []string {
		var out []string
		for _, r := range role.Rules {
			if slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) {
				out = append(out, r.Verbs...)
			}
		}
		return slices.Compact(slices.Sorted(slices.Values(out)))
	}
	for _, want := range []struct {
		group, resource string
		verbs           []string
	}{
		{"", "events", []string{"create"}},
		{"kopf.dev", "kopfpeerings", []string{"list", "patch", "watch"}},
		{"kopf.dev", "clusterkopfpeerings", []string{"list", "patch", "watch"}},
	} {
		if diff := cmp.Diff(want.verbs, verbs(want.group, want.resource)); diff != "" {
			t.Errorf("config/rbac/role.yaml: the verbs on %s.%s -want +got:\n%s\n%s", want.resource, want.group, diff, data)
		}
	}
}

// without returns env less the variable key.
func without(env []string, key string) []string {
	var kept []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, key+"=") {
			kept = append(kept, kv)
		}
	}
	return kept
}

// cacheDir keeps kubebuilder and the project's tools across runs.
func cacheDir(t *testing.T) string {
	t.Helper()
	base, err := os.UserCacheDir()
	if err != nil {
		t.Fatalf("find the cache directory: %v", err)
	}
	dir := filepath.Join(base, "kopf-go", "kubebuilder-"+kubebuilderVersion)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// buildKubebuilder builds kubebuilder from the module proxy, once: later
// runs find it in the cache.
func buildKubebuilder(t *testing.T, cache string) string {
	t.Helper()
	path := filepath.Join(cache, "kubebuilder")
	if _, err := os.Stat(path); err == nil {
		return path
	}
	tmp, err := os.MkdirTemp(cache, "build-")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	env := append(os.Environ(), "GOBIN="+tmp, "GOFLAGS=-mod=mod", "GOWORK=off")
	runIn(t, tmp, env, "build kubebuilder (once; cached in "+cache+")", "go", "install", "sigs.k8s.io/kubebuilder/v4@"+kubebuilderVersion)
	if err := os.Rename(filepath.Join(tmp, "kubebuilder"), path); err != nil {
		t.Fatal(err)
	}
	return path
}

// installPlugin installs the plugin with `make install-plugin` into a
// plugins root of its own, and checks that it lands where kubebuilder
// looks for it: <root>/<name>/<version>/<name>.
func installPlugin(t *testing.T, root string) string {
	t.Helper()
	plugins := t.TempDir()
	runIn(t, root, append(os.Environ(), "EXTERNAL_PLUGINS_PATH="+plugins), "make install-plugin", "make", "install-plugin")
	binary := filepath.Join(plugins, filepath.FromSlash(pluginKey), "kopf.kopf.dev")
	if info, err := os.Stat(binary); err != nil || info.Mode()&0o111 == 0 {
		t.Fatalf("make install-plugin left no executable at %s (%v)", binary, err)
	}
	return plugins
}

// runIn runs a command, logs how long it took, and fails the test with
// its output if it fails. It returns the output (stdout and stderr).
func runIn(t *testing.T, dir string, env []string, what, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = dir, env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	started := time.Now()
	err := cmd.Run()
	t.Logf("%s: %s", what, time.Since(started).Round(10*time.Millisecond))
	if err != nil {
		t.Fatalf("%s (%s %s): %v\n%s", what, name, strings.Join(args, " "), err, out.String())
	}
	return out.String()
}

func readFile(t *testing.T, dir, file string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(file)))
	if err != nil {
		t.Fatal(fmt.Errorf("the project lacks %s: %w", file, err))
	}
	return string(data)
}
