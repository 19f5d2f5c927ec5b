package arch

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// architectureDoc is the document this test keeps true.
const architectureDoc = "docs/ARCHITECTURE.md"

// TestArchitectureListsEveryPackage: the package lists of ARCHITECTURE.md
// (its first code blocks) name every package of test/arch's layers, and
// only those; a package added or removed fails here with the line to fix.
func TestArchitectureListsEveryPackage(t *testing.T) {
	_, root := moduleRoot(t)
	lines := docLines(t, root)
	listed := map[string]int{}
	for _, line := range packageBlockLines(lines) {
		if m := packageLine.FindStringSubmatch(line.text); m != nil {
			listed[strings.TrimSuffix(m[1], "/")] = line.number
		}
	}
	var layered []string
	for _, layer := range layers {
		layered = append(layered, layer...)
	}
	for _, p := range layered {
		if _, ok := listed[p]; !ok {
			t.Errorf("%s: the package lists lack %s, which test/arch's layers have: add a line for it", architectureDoc, p)
		}
	}
	for p, n := range listed {
		if !slices.Contains(layered, p) {
			t.Errorf("%s:%d: %s is listed, but test/arch's layers do not have it: remove the line, or add the package to the layers", architectureDoc, n, p)
		}
		if _, err := os.Stat(filepath.Join(root, p)); err != nil {
			t.Errorf("%s:%d: %s is listed, but there is no such directory", architectureDoc, n, p)
		}
	}
}

// TestArchitectureTypesAreWhereItSays: each row of the engine's tables,
// "| `type`, `type` (pkg/file.go, pkg/file.go) | job |", names types
// declared in one of the files it names, under internal/.
func TestArchitectureTypesAreWhereItSays(t *testing.T) {
	_, root := moduleRoot(t)
	declaredIn := map[string]map[string]string{}
	rows := 0
	for _, line := range docLines(t, root) {
		m := typeRow.FindStringSubmatch(line.text)
		if m == nil {
			continue
		}
		rows++
		files := strings.Split(m[2], ",")
		for i := range files {
			files[i] = strings.TrimSpace(files[i])
		}
		pkg := filepath.Dir(files[0])
		if declaredIn[pkg] == nil {
			declaredIn[pkg] = declarations(t, filepath.Join(root, "internal", pkg))
		}
		for _, name := range backticked.FindAllStringSubmatch(m[1], -1) {
			file, ok := declaredIn[pkg][name[1]]
			switch {
			case !ok:
				t.Errorf("%s:%d: internal/%s declares no %s", architectureDoc, line.number, pkg, name[1])
			case !slices.Contains(files, filepath.Join(pkg, file)):
				t.Errorf("%s:%d: %s is declared in %s, not in %s", architectureDoc, line.number, name[1], filepath.Join(pkg, file), strings.Join(files, ", "))
			}
		}
		for _, f := range files {
			if _, err := os.Stat(filepath.Join(root, "internal", f)); err != nil {
				t.Errorf("%s:%d: internal/ has no file %s", architectureDoc, line.number, f)
			}
		}
	}
	if rows == 0 {
		t.Fatalf("%s: no rows of the engine's types found; the tables' form changed", architectureDoc)
	}
}

var (
	// packageLine is a line of the package lists: a path at the start.
	packageLine = regexp.MustCompile(`^((?:internal|pkg|handlers|cmd)(?:/[a-z0-9/]*)?)\s`)
	// typeRow is a row of the engine's tables: names, then (files).
	typeRow    = regexp.MustCompile("^\\| (`[^|]*`) \\(([a-z_/]+\\.go(?:, [a-z_/]+\\.go)*)\\) \\|")
	backticked = regexp.MustCompile("`([A-Za-z_][A-Za-z0-9_]*)`")
)

type docLine struct {
	number int
	text   string
}

func docLines(t *testing.T, root string) []docLine {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, architectureDoc))
	if err != nil {
		t.Fatal(err)
	}
	var out []docLine
	for i, l := range strings.Split(string(data), "\n") {
		out = append(out, docLine{i + 1, l})
	}
	return out
}

// packageBlockLines are the lines of the code blocks in the section
// "Packages and layering".
func packageBlockLines(lines []docLine) []docLine {
	var out []docLine
	inSection, inBlock := false, false
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l.text, "## "):
			inSection = l.text == "## Packages and layering"
		case inSection && strings.HasPrefix(l.text, "```"):
			inBlock = !inBlock
		case inSection && inBlock:
			out = append(out, l)
		}
	}
	return out
}

// declarations maps the package's top-level names (types and functions)
// to the file that declares them.
func declarations(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, e.Name()), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.GenDecl:
				for _, s := range d.Specs {
					if ts, ok := s.(*ast.TypeSpec); ok {
						out[ts.Name.Name] = e.Name()
					}
				}
			case *ast.FuncDecl:
				if d.Recv == nil {
					out[d.Name.Name] = e.Name()
				}
			}
		}
	}
	return out
}
