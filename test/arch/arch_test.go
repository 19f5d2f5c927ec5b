// Package arch checks the project's layering by parsing the imports of every
// package under pkg/, internal/ and handlers/.
package arch

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// layers is the allowed order, lowest first: a package may import only
// packages of lower layers. Packages of one layer are peers and must not
// import each other. A new package needs a place here.
var layers = [][]string{
	{"pkg/fields", "internal/pyjson", "internal/isotime", "internal/freeze", "pkg/apis/kopf/v1", "pkg/memo", "pkg/indexing", "internal/lazylog", "internal/envtestbin", "internal/sharding", "internal/scopes", "internal/selfsigned",
		"internal/jitter", "internal/precondition",
		// The metrics' definitions import nothing of the project.
		"internal/metrics",
		// The containment of the operator's callbacks' panics.
		"internal/contain",
		// The tests' one polling loop, under kopftest.Eventually.
		"internal/await",
		// The spans of cycles, handlers, reviews and their API requests.
		"internal/tracing",
		// What handlers' errors and the Events' settings are.
		"pkg/failure", "pkg/events"},
	{"pkg/diff", "pkg/patch", "pkg/hierarchies", "pkg/filter"},
	// What handlers learn (the causes, the admission requests), the
	// annotation keys, and the engine's own operations on a cycle's patch.
	{"pkg/keys", "pkg/cause", "pkg/admission", "internal/mergepatch"},
	{"pkg/progress", "pkg/diffbase", "internal/causes"},
	// Running handlers; converting objects between versions.
	{"internal/execution", "internal/conversion"},
	// The supervisor of daemons, the objects' memories in this process,
	// and the conditions derived from the handlers' progress.
	{"internal/daemons", "internal/memory", "internal/conditions"},
	{"internal/registry"},
	{"internal/posting", "internal/peering", "internal/admission", "internal/rounds", "internal/ownership", "internal/clients", "internal/objects"},
	{"internal/ring", "internal/write", "internal/write/writetest", "internal/resources", "internal/activities", "internal/admission/managed",
		"internal/conversion/managed",
		// The runner's servers' security, and the login handlers' relogins.
		"internal/runner", "internal/relogin"},
	{"internal/ring/share", "internal/namespaces"},
	// One object's cycle, and the tests' example kind of whole cycles.
	{"internal/cycle", "internal/cycle/cycletest"},
	// The raw events of a kind; the child handlers' watch of its children.
	{"internal/lowlevel", "internal/children"},
	{"internal/engine"},
	{"handlers"},
	// The test toolkits run registries and build handlers' causes, so they
	// stand above handlers.
	{"pkg/kopftest", "pkg/handlertest"},
}

// pure packages hold logic only: no controller-runtime, no client-go, no
// goroutines.
var pure = []string{
	"pkg/fields", "internal/pyjson", "internal/isotime", "internal/freeze", "pkg/apis/kopf/v1", "pkg/memo", "pkg/indexing", "internal/lazylog", "pkg/diff", "pkg/keys", "pkg/patch", "pkg/progress",
	"pkg/diffbase", "internal/causes", "internal/registry", "internal/execution", "internal/sharding", "internal/scopes", "internal/selfsigned",
	"internal/rounds", "internal/jitter", "internal/contain", "internal/precondition", "internal/await", "internal/memory",
	"pkg/cause", "pkg/admission", "pkg/failure", "pkg/events", "pkg/filter", "internal/mergepatch", "internal/conditions",
	"internal/conversion",
}

// controllerRuntimeAllowed are the only packages that may import
// controller-runtime.
var controllerRuntimeAllowed = []string{"internal/engine", "internal/cycle", "internal/cycle/cycletest", "internal/lowlevel", "internal/children", "internal/ownership", "internal/clients", "internal/objects",
	"internal/write", "internal/write/writetest", "internal/resources", "internal/activities", "internal/namespaces", "internal/runner", "internal/relogin", "internal/posting", "internal/admission", "internal/admission/managed",
	"internal/ring", "internal/ring/share", "internal/metrics", "handlers", "pkg/kopftest", "pkg/handlertest"}

// toolkits are the packages outside handlers built on it: the test
// toolkits for operator authors.
var toolkits = []string{"pkg/kopftest", "pkg/handlertest"}

const (
	controllerRuntime = "sigs.k8s.io/controller-runtime"
	clientGo          = "k8s.io/client-go"
)

// pkgInfo is what the checks need to know about one package: its
// directory relative to the module root, the imports of its non-test files,
// and where those files start goroutines.
type pkgInfo struct {
	Dir        string
	Imports    []string
	Goroutines []string
}

func TestLayering(t *testing.T) {
	module, root := moduleRoot(t)
	pkgs := collect(t, root, "pkg", "internal", "handlers")

	var dirs []string
	for _, p := range pkgs {
		dirs = append(dirs, p.Dir)
	}
	// Guard against a vacuous pass (a wrong root finds nothing).
	for _, must := range []string{"pkg/fields", "internal/registry", "internal/cycle", "internal/engine", "handlers", "pkg/kopftest"} {
		if !slices.Contains(dirs, must) {
			t.Fatalf("package %s not found under %s; found %v", must, root, dirs)
		}
	}
	if v := violations(module, pkgs); len(v) > 0 {
		t.Errorf("layering violations:\n%s", strings.Join(v, "\n"))
	}
}

// TestChecksCatchViolations proves that each rule can fail.
func TestChecksCatchViolations(t *testing.T) {
	const mod = "example.com/m"
	pkgs := []pkgInfo{
		{Dir: "pkg/fields", Imports: []string{"strings", mod + "/pkg/diff"}},
		{Dir: "pkg/diff", Imports: []string{mod + "/pkg/patch", mod + "/pkg/fields"}},
		{Dir: "internal/causes", Imports: []string{controllerRuntime + "/pkg/client", clientGo + "/rest"}, Goroutines: []string{"causes.go:10"}},
		{Dir: "internal/posting", Imports: []string{controllerRuntime + "/pkg/client", mod + "/handlers"}},
		{Dir: "internal/engine", Imports: []string{mod + "/internal/newcomer", clientGo + "/discovery"}},
		{Dir: "internal/newcomer", Imports: []string{controllerRuntime}},
		{Dir: "handlers", Imports: []string{mod + "/internal/engine", mod + "/pkg/fields", controllerRuntime}},
	}
	allowed := strings.Join(controllerRuntimeAllowed, ", ")
	want := []string{
		"internal/causes imports k8s.io/client-go/rest: pure packages must not use client-go",
		"internal/causes imports sigs.k8s.io/controller-runtime/pkg/client: only " + allowed + " may use controller-runtime",
		"internal/causes imports sigs.k8s.io/controller-runtime/pkg/client: pure packages must not use controller-runtime",
		"internal/causes starts a goroutine at causes.go:10: pure packages must not",
		"internal/engine imports internal/newcomer: internal/newcomer has no place in the layering",
		"internal/newcomer has no place in the layering: add it to layers in test/arch",
		"internal/newcomer imports sigs.k8s.io/controller-runtime: only " + allowed + " may use controller-runtime",
		"internal/posting imports handlers: handlers is not in a lower layer",
		"internal/posting imports handlers: packages under pkg/ and internal/ must not import handlers",
		"pkg/diff imports pkg/patch: pkg/patch is not in a lower layer",
		"pkg/fields imports pkg/diff: pkg/diff is not in a lower layer",
	}
	got := violations(mod, pkgs)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("violations() -want +got:\n%s", diff)
	}
}

// violations applies every rule and returns the breaches, sorted.
func violations(module string, pkgs []pkgInfo) []string {
	rank := map[string]int{}
	for i, layer := range layers {
		for _, dir := range layer {
			rank[dir] = i
		}
	}
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	for _, p := range pkgs {
		own, known := rank[p.Dir]
		if !known {
			add("%s has no place in the layering: add it to layers in test/arch", p.Dir)
		}
		isPure := slices.Contains(pure, p.Dir)
		for _, imp := range p.Imports {
			if isUnder(imp, controllerRuntime) {
				if !slices.Contains(controllerRuntimeAllowed, p.Dir) {
					add("%s imports %s: only %s may use controller-runtime", p.Dir, imp, strings.Join(controllerRuntimeAllowed, ", "))
				}
				if isPure {
					add("%s imports %s: pure packages must not use controller-runtime", p.Dir, imp)
				}
			}
			if isPure && isUnder(imp, clientGo) {
				add("%s imports %s: pure packages must not use client-go", p.Dir, imp)
			}
			if !isUnder(imp, module) {
				continue
			}
			target := strings.TrimPrefix(strings.TrimPrefix(imp, module), "/")
			if (strings.HasPrefix(p.Dir, "pkg/") || strings.HasPrefix(p.Dir, "internal/")) && !slices.Contains(toolkits, p.Dir) && isUnder(target, "handlers") {
				add("%s imports %s: packages under pkg/ and internal/ must not import handlers", p.Dir, target)
			}
			theirs, ok := rank[target]
			switch {
			case !ok:
				add("%s imports %s: %s has no place in the layering", p.Dir, target, target)
			case known && theirs >= own:
				add("%s imports %s: %s is not in a lower layer", p.Dir, target, target)
			}
		}
		if isPure {
			for _, at := range p.Goroutines {
				add("%s starts a goroutine at %s: pure packages must not", p.Dir, at)
			}
		}
	}
	slices.Sort(out)
	return out
}

func isUnder(path, prefix string) bool {
	return path == prefix || strings.HasPrefix(path, prefix+"/")
}

// moduleRoot finds the module's path and root directory from go.mod.
func moduleRoot(t *testing.T) (string, string) {
	t.Helper()
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil {
			for _, line := range strings.Split(string(data), "\n") {
				if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
					return strings.TrimSpace(rest), dir
				}
			}
			t.Fatalf("no module line in %s/go.mod", dir)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found")
		}
		dir = parent
	}
}

// collect parses the non-test Go files of every package under the given
// top-level directories.
func collect(t *testing.T, root string, tops ...string) []pkgInfo {
	t.Helper()
	byDir := map[string]*pkgInfo{}
	fset := token.NewFileSet()
	for _, top := range tops {
		err := filepath.WalkDir(filepath.Join(root, top), func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if name := d.Name(); name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			file, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			rel, err := filepath.Rel(root, filepath.Dir(path))
			if err != nil {
				return err
			}
			rel = filepath.ToSlash(rel)
			p := byDir[rel]
			if p == nil {
				p = &pkgInfo{Dir: rel}
				byDir[rel] = p
			}
			for _, imp := range file.Imports {
				path := strings.Trim(imp.Path.Value, `"`)
				if !slices.Contains(p.Imports, path) {
					p.Imports = append(p.Imports, path)
				}
			}
			ast.Inspect(file, func(n ast.Node) bool {
				if g, ok := n.(*ast.GoStmt); ok {
					pos := fset.Position(g.Pos())
					p.Goroutines = append(p.Goroutines, fmt.Sprintf("%s:%d", filepath.Base(pos.Filename), pos.Line))
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatalf("walk %s: %v", top, err)
		}
	}
	var out []pkgInfo
	for _, p := range byDir {
		out = append(out, *p)
	}
	slices.SortFunc(out, func(a, b pkgInfo) int { return strings.Compare(a.Dir, b.Dir) })
	return out
}
