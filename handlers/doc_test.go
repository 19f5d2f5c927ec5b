package handlers

import (
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"strings"
	"testing"
)

// The causes are aliases of the engine's types, so go doc shows only
// their comments: each comment must name every exported field, and stay
// true as fields are added.
func TestAliasCommentsNameEveryField(t *testing.T) {
	for _, tt := range []struct {
		file, alias string
		typ         reflect.Type
	}{
		{"change.go", "Cause", reflect.TypeFor[Cause]()},
		{"daemons.go", "DaemonCause", reflect.TypeFor[DaemonCause]()},
		{"admission.go", "AdmissionRequest", reflect.TypeFor[AdmissionRequest]()},
	} {
		comment := aliasComment(t, tt.file, tt.alias)
		for i := range tt.typ.NumField() {
			f := tt.typ.Field(i)
			if !f.IsExported() {
				continue
			}
			if !commentNames(comment, f.Name) {
				t.Errorf("the comment of %s does not name its field %s", tt.alias, f.Name)
			}
		}
	}
}

// aliasComment is the doc comment of a type declaration in a file of the
// package.
func aliasComment(t *testing.T, file, name string) string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	for _, decl := range f.Decls {
		g, ok := decl.(*ast.GenDecl)
		if !ok {
			continue
		}
		for _, spec := range g.Specs {
			if ts, ok := spec.(*ast.TypeSpec); ok && ts.Name.Name == name {
				return g.Doc.Text()
			}
		}
	}
	t.Fatalf("no type %s in %s", name, file)
	return ""
}

// commentNames tells whether a line of the comment's field list starts
// with the field's name (alone, or in a list such as "Old, New").
func commentNames(comment, field string) bool {
	for _, line := range strings.Split(comment, "\n") {
		names, _, _ := strings.Cut(strings.TrimSpace(line), "  ")
		for _, n := range strings.Split(names, ",") {
			if strings.TrimSpace(n) == field {
				return true
			}
		}
	}
	return false
}
