package scaffold

import (
	"bytes"
	"embed"
	"fmt"
	"go/format"
	"strconv"
	"strings"
	"text/template"
)

//go:embed templates/*.tmpl
var templateFiles embed.FS

// templates are parsed once; a broken template is a bug of this plugin,
// caught by its tests.
var templates = template.Must(template.ParseFS(templateFiles, "templates/*.tmpl"))

// render executes a template; a Go file (by its name) is also formatted,
// which checks that it parses.
func render(name string, data any) (string, error) {
	var out bytes.Buffer
	if err := templates.ExecuteTemplate(&out, name, data); err != nil {
		return "", fmt.Errorf("render %s: %w", name, err)
	}
	if !strings.HasSuffix(name, ".go.tmpl") {
		return out.String(), nil
	}
	formatted, err := format.Source(out.Bytes())
	if err != nil {
		return "", fmt.Errorf("render %s: the result is not Go: %w", name, err)
	}
	return string(formatted), nil
}

// boilerplate is the project's license header for Go files
// (hack/boilerplate.go.txt, whose YEAR kubebuilder fills in), followed by
// a blank line; "" if the project has none.
func boilerplate(u map[string]string, year int) string {
	header := strings.TrimSpace(u["hack/boilerplate.go.txt"])
	if header == "" {
		return ""
	}
	return strings.ReplaceAll(header, "YEAR", strconv.Itoa(year)) + "\n\n"
}

// kindData is what the per-kind templates see.
type kindData struct {
	kind
	Boilerplate string
	// Var is the kind's name for unexported Go identifiers (widget), and
	// VarPlural the variable of its handle in the registry (widgets).
	Var, VarPlural string
	// Lower is the kind's part of handler ids (create_widget).
	Lower string
	// RBACGroup is the group as RBAC markers spell it ("" for the core
	// group).
	RBACGroup string
	// StatusKept: the CRD keeps the fields of status its schema does not
	// list, so handler results can be checked there.
	StatusKept bool
	// Daemon, Timer, Validating, Mutating: what to scaffold.
	Daemon, Timer, Validating, Mutating bool
}

func newKindData(k kind, boilerplate string) kindData {
	v := strings.ToLower(k.Name[:1]) + k.Name[1:]
	group := k.Group
	if group == "" {
		group = `""`
	}
	return kindData{kind: k, Boilerplate: boilerplate, Var: v, VarPlural: plural(v), Lower: k.lower(), RBACGroup: group}
}
