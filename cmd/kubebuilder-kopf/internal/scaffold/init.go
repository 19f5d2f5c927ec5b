package scaffold

import (
	"errors"
	"fmt"
	"path"

	"github.com/kopf-go/kopf/config/crd"
	"github.com/kopf-go/kopf/internal/envtestbin"
)

// Input is what every scaffold reads.
type Input struct {
	// Universe is the project's files by relative path, as kubebuilder
	// sends them (after the plugins before this one in the chain).
	Universe map[string]string
	Project  Project
	// Year fills in the YEAR of the project's license header.
	Year int
}

// Result is what a scaffold changes: whole files to write, and notes for
// the user (kubebuilder shows the plugin's stderr).
type Result struct {
	Files map[string]string
	Notes []string
}

func (r *Result) write(path, content string) {
	if r.Files == nil {
		r.Files = map[string]string{}
	}
	r.Files[path] = content
}

func (r *Result) note(format string, args ...any) {
	r.Notes = append(r.Notes, fmt.Sprintf(format, args...))
}

// InitOptions say how kopf-go joins the project.
type InitOptions struct {
	// KopfVersion is the version of kopf-go that go.mod requires.
	KopfVersion string
	// KopfReplace, if set, replaces kopf-go in go.mod with a directory
	// (a checkout) or module@version (a fork).
	KopfReplace string
}

// Files of the project that init writes.
const (
	setupFile    = "internal/kopf/setup.go"
	suiteFile    = "internal/kopf/suite_test.go"
	scriptFile   = "hack/envtest-binaries.sh"
	peeringCRDir = "config/crd/kopf"
)

// Init adds kopf-go to a project that go/v4 scaffolded: the requirement
// in go.mod, the Setup call in cmd/main.go, internal/kopf's shared files,
// the envtest recipe (with a Makefile target of its own, and go/v4's
// `make test` running against it), and the peering CRDs. The user's files
// (internal/kopf's) are written only when absent; kopf-go's own (the
// script, the CRDs) are brought up to date.
func Init(in Input, o InitOptions) (Result, error) {
	var r Result
	u := in.Universe
	for _, need := range []string{"go.mod", "cmd/main.go"} {
		if _, ok := u[need]; !ok {
			return r, fmt.Errorf("the project has no %s: kopf-go joins a go/v4 project, so chain it after go/v4 (--plugins go/v4,kopf.kopf.dev/v1-alpha)", need)
		}
	}
	if o.KopfVersion == "" {
		return r, fmt.Errorf("--kopf-version is empty")
	}

	gomod, changed := requireKopf(u["go.mod"], o.KopfVersion)
	if o.KopfReplace != "" {
		var replaced bool
		var err error
		if gomod, replaced, err = replaceKopf(gomod, o.KopfReplace); err != nil {
			return r, err
		}
		changed = changed || replaced
	}
	if changed {
		r.write("go.mod", gomod)
	}

	setupCall, err := render("main-setup.tmpl", in.Project)
	if err != nil {
		return r, err
	}
	main, changed, err := wireMain(u["cmd/main.go"], in.Project.Repo, setupCall)
	if err != nil {
		return r, err
	}
	if changed {
		r.write("cmd/main.go", main)
	}

	header := boilerplate(u, in.Year)
	for file, tmpl := range map[string]string{setupFile: "setup.go.tmpl", suiteFile: "suite_test.go.tmpl"} {
		if _, ok := u[file]; ok {
			continue
		}
		content, err := render(tmpl, struct{ Boilerplate string }{header})
		if err != nil {
			return r, err
		}
		r.write(file, content)
	}

	r.write(scriptFile, string(envtestbin.Script))
	if makefile, ok := u["Makefile"]; ok {
		section, err := render("makefile.tmpl", nil)
		if err != nil {
			return r, err
		}
		makefile, added := addMakeTarget(makefile, section)
		makefile, offline, err := runTestsOffline(makefile)
		switch {
		case errors.Is(err, errNoTestTarget):
			r.note("the Makefile has no test target; `make kopf-test` runs the kopf-go tests")
		case err != nil:
			return r, err
		}
		if added || offline {
			r.write("Makefile", makefile)
		}
	} else {
		r.note("the project has no Makefile: run the kopf-go tests with KUBEBUILDER_ASSETS=\"$(bash %s)\" go test ./internal/kopf/...", scriptFile)
	}

	if err := writePeeringCRDs(&r); err != nil {
		return r, err
	}
	r.note("kopf-go is wired into cmd/main.go; add handlers with `create api` (or `create api --plugins kopf.kopf.dev/v1-alpha` for an existing kind)")
	return r, nil
}

// writePeeringCRDs writes the peering CRDs with a kustomization of them.
func writePeeringCRDs(r *Result) error {
	for _, name := range crd.PeeringFiles {
		data, err := crd.Files.ReadFile(name)
		if err != nil {
			return fmt.Errorf("read the peering CRD %s: %w", name, err)
		}
		r.write(path.Join(peeringCRDir, name), string(data))
	}
	kustomization, err := render("kustomization.yaml.tmpl", crd.PeeringFiles)
	if err != nil {
		return err
	}
	r.write(path.Join(peeringCRDir, "kustomization.yaml"), kustomization)
	return nil
}
