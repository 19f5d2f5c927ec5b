package scaffold

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// Module is kopf-go's module path.
const Module = "github.com/kopf-go/kopf"

// Edits of files that kubebuilder's go/v4 plugin scaffolded. Each is
// idempotent: what is there already is left alone, so `edit` can repeat
// what `init` did.

// requireKopf adds kopf-go to go.mod's requirements. `go mod tidy` (which
// go/v4 runs after init) merges the extra require block into the main one.
func requireKopf(gomod, version string) (string, bool) {
	for _, line := range strings.Split(gomod, "\n") {
		if directiveOf(line, "require") == Module && !strings.Contains(line, "=>") {
			return gomod, false
		}
	}
	return ensureNewline(gomod) + "\nrequire " + Module + " " + version + "\n", true
}

// replaceKopf points kopf-go at a directory or at another module@version,
// unless go.mod replaces it already.
func replaceKopf(gomod, target string) (string, bool, error) {
	var to string
	switch mod, version, isModule := strings.Cut(target, "@"); {
	case isModule:
		if mod == "" || version == "" {
			return "", false, fmt.Errorf("--kopf-replace %q: want module@version", target)
		}
		to = mod + " " + version
	case filepath.IsAbs(target) || strings.HasPrefix(target, "./") || strings.HasPrefix(target, "../"):
		to = target
		if strings.ContainsAny(target, " \t\"") {
			to = strconv.Quote(target)
		}
	default:
		return "", false, fmt.Errorf("--kopf-replace %q: want a directory (absolute, or ./ or ../ relative to the project) or module@version", target)
	}
	for _, line := range strings.Split(gomod, "\n") {
		if strings.Contains(line, "=>") && directiveOf(line, "replace") == Module {
			return gomod, false, nil
		}
	}
	return ensureNewline(gomod) + "\nreplace " + Module + " => " + to + "\n", true, nil
}

// The markers go/v4 leaves in cmd/main.go for what later scaffolds add.
const (
	importsMarker = "// +kubebuilder:scaffold:imports"
	builderMarker = "// +kubebuilder:scaffold:builder"
)

// wireMain imports internal/kopf in cmd/main.go and calls its Setup
// beside the controllers (before the builder marker, where go/v4 adds
// each controller's setup after it).
func wireMain(main, repo, setup string) (string, bool, error) {
	if strings.Contains(main, "kopf.Setup(") {
		return main, false, nil
	}
	for _, marker := range []string{importsMarker, builderMarker} {
		if !strings.Contains(main, marker) {
			return "", false, fmt.Errorf("cmd/main.go has no %q marker: add internal/kopf's Setup by hand (see kopf-go's docs/kubebuilder-plugin.md)", marker)
		}
	}
	main = insertBefore(main, importsMarker, "\t\""+repo+"/internal/kopf\"\n")
	main = insertBefore(main, builderMarker, setup)
	return main, true, nil
}

// preserveMarker keeps the fields of status that the CRD's schema does
// not list: kopf-go writes each handler's result to status.<handler id>,
// which the API server would otherwise drop.
const preserveMarker = "+kubebuilder:pruning:PreserveUnknownFields"

// keepStatusFields marks the <Kind>Status type of a go/v4 types file with
// preserveMarker. It reports whether the marker is there afterwards.
func keepStatusFields(types, kindName string) (string, bool, bool) {
	decl := regexp.MustCompile(`(?m)^type ` + regexp.QuoteMeta(kindName) + `Status struct\s*\{`)
	loc := decl.FindStringIndex(types)
	if loc == nil {
		return types, false, false
	}
	// The type's doc comment: the comment lines right above it.
	lines := strings.Split(types[:loc[0]], "\n")
	for i := len(lines) - 2; i >= 0 && strings.HasPrefix(strings.TrimSpace(lines[i]), "//"); i-- {
		if strings.Contains(lines[i], preserveMarker) {
			return types, false, true
		}
	}
	note := "// kopf-go keeps each handler's result in status.<handler id>, which the\n" +
		"// schema does not list: the API server keeps such fields with this marker.\n" +
		"// " + preserveMarker + "\n"
	return types[:loc[0]] + note + types[loc[0]:], true, true
}

// insertBefore inserts text at the start of the first line that contains
// the marker.
func insertBefore(s, marker, text string) string {
	i := strings.Index(s, marker)
	if i < 0 {
		return s
	}
	lineStart := strings.LastIndex(s[:i], "\n") + 1
	return s[:lineStart] + text + s[lineStart:]
}

// directiveOf returns the module path of a go.mod line of the given
// directive, alone or in its block ("require m v" or "\tm v"), else "".
func directiveOf(line, directive string) string {
	fields := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), directive))
	if len(fields) < 2 {
		return ""
	}
	return fields[0]
}

func ensureNewline(s string) string {
	if s == "" || strings.HasSuffix(s, "\n") {
		return s
	}
	return s + "\n"
}
