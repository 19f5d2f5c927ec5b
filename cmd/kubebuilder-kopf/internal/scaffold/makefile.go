package scaffold

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Edits of the Makefile that go/v4 scaffolded: the kopf-go section, and
// the control plane of go/v4's own `test` target. Both are idempotent.

// makefileSection is where the kopf-go targets go: before go/v4's Build
// section, so that `make help` lists them with the development targets.
const makefileSection = "##@ Build"

// addMakeTarget adds the kopf-go section to the Makefile.
func addMakeTarget(makefile, section string) (string, bool) {
	if strings.Contains(makefile, "\nkopf-test:") {
		return makefile, false
	}
	if strings.Contains(makefile, "\n"+makefileSection+"\n") {
		return insertBefore(makefile, makefileSection, section), true
	}
	return ensureNewline(makefile) + "\n" + section, true
}

// setupEnvtestAssets is how go/v4's `test` target gives `go test` its
// control plane: the directory that `setup-envtest use ... -p path`
// prints. Kubebuilder v4 has written $(ENVTEST) with and without quotes.
var setupEnvtestAssets = regexp.MustCompile(`KUBEBUILDER_ASSETS="?\$\(shell\s+"?\$\(ENVTEST\)"?\s+use\s[^\n]*?-p\s+path\)"?`)

// builtAssets replaces setupEnvtestAssets: the directory of the binaries
// that the script builds. The && stops the recipe when the build fails,
// which an assignment in front of `go test` would not.
const builtAssets = `assets="$$(bash ` + scriptFile + `)" && KUBEBUILDER_ASSETS="$$assets"`

// setupEnvtestPrereqs are the prerequisites through which go/v4's `test`
// target installs setup-envtest (and has it download the binaries):
// `setup-envtest` today, `envtest` in older kubebuilder v4 releases.
var setupEnvtestPrereqs = map[string]bool{"setup-envtest": true, "envtest": true, "$(ENVTEST)": true}

// offlineNote goes above the edited target, for a reader of the Makefile
// who wonders why it is not go/v4's.
const offlineNote = `# kopf-go: the tests run against kube-apiserver and etcd built from source
# through the Go module proxy by ` + scriptFile + ` (once; cached),
# which needs no other network, unlike setup-envtest's downloads.
`

// errNoTestTarget says the Makefile has no `test` target to edit.
var errNoTestTarget = errors.New("the Makefile has no test target")

// runTestsOffline makes go/v4's `make test` run against the control plane
// that the script builds instead of the one setup-envtest downloads: it
// drops the test target's setup-envtest prerequisite and points
// KUBEBUILDER_ASSETS at the script's directory. Setup-envtest needs the
// internet twice, to install itself (at a version derived from go.mod,
// which the module proxy may not serve) and to download the binaries;
// the script needs only the module proxy, and gives `make test` the same
// binaries as `make kopf-test`. A test target that uses the script
// already is left alone; one of another shape is an error, since editing
// it blindly could break it.
func runTestsOffline(makefile string) (string, bool, error) {
	lines := strings.Split(makefile, "\n")
	rule := -1
	for i, line := range lines {
		if isTestRule(line) {
			rule = i
			break
		}
	}
	if rule < 0 {
		return makefile, false, errNoTestTarget
	}
	end := rule + 1
	for end < len(lines) && (strings.HasPrefix(lines[end], "\t") || strings.HasSuffix(lines[end-1], "\\")) {
		end++
	}
	recipe := lines[rule+1 : end]
	if strings.Contains(strings.Join(recipe, "\n"), scriptFile) {
		return makefile, false, nil
	}
	edited := false
	for i, line := range recipe {
		if setupEnvtestAssets.MatchString(line) {
			recipe[i] = setupEnvtestAssets.ReplaceAllLiteralString(line, builtAssets)
			edited = true
		}
	}
	if !edited {
		return makefile, false, fmt.Errorf("the Makefile's test target does not set KUBEBUILDER_ASSETS from setup-envtest as go/v4's does, so kopf-go leaves it alone: "+
			"give its `go test` the script's binaries, e.g. KUBEBUILDER_ASSETS=\"$$(bash %s)\" go test ... in the recipe (see kopf-go's docs/kubebuilder-plugin.md), then run the command again", scriptFile)
	}
	lines[rule] = dropPrereqs(lines[rule], setupEnvtestPrereqs)
	at := rule
	if at > 0 && strings.TrimSpace(lines[at-1]) == ".PHONY: test" {
		at--
	}
	lines = slices.Insert(lines, at, strings.Split(strings.TrimSuffix(offlineNote, "\n"), "\n")...)
	return strings.Join(lines, "\n"), true, nil
}

// isTestRule reports whether a Makefile line is the rule line of the
// `test` target (not test-e2e's, nor a variable named test).
func isTestRule(line string) bool {
	rest, ok := strings.CutPrefix(line, "test")
	if !ok {
		return false
	}
	rest = strings.TrimLeft(rest, " \t")
	return strings.HasPrefix(rest, ":") && !strings.HasPrefix(rest, ":=") && !strings.HasPrefix(rest, "::=")
}

// dropPrereqs removes the named prerequisites from a rule line, keeping
// its help comment.
func dropPrereqs(rule string, drop map[string]bool) string {
	target, rest, _ := strings.Cut(rule, ":")
	prereqs, comment, hasComment := strings.Cut(rest, "#")
	var kept []string
	for _, p := range strings.Fields(prereqs) {
		if !drop[p] {
			kept = append(kept, p)
		}
	}
	line := target + ":"
	if len(kept) > 0 {
		line += " " + strings.Join(kept, " ")
	}
	if hasComment {
		line += " #" + comment
	}
	return line
}
