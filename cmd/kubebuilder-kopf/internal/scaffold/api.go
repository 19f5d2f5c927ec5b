package scaffold

import (
	"fmt"
	"path"
)

// APIOptions say which kind gets handlers, and which handlers.
type APIOptions struct {
	Group, Version, Kind string
	// Daemon and Timer add a daemon and a timer to the change handlers.
	Daemon, Timer bool
	// Force overwrites the kind's handler files.
	Force bool
}

// API scaffolds internal/kopf/<kind>_handlers.go, the change handlers
// (and a daemon, a timer) of one kind, with a test of them against a
// control plane when the kind is the project's own (its objects can be
// created without knowing their spec). It also has the kind's CRD keep
// the handlers' results in status.
func API(in Input, o APIOptions) (Result, error) {
	var r Result
	if _, ok := in.Universe[setupFile]; !ok {
		return r, errNotInitialised
	}
	k, err := resolveKind(in.Project, in.Universe, o.Group, o.Version, o.Kind)
	if err != nil {
		return r, err
	}
	data := newKindData(k, boilerplate(in.Universe, in.Year))
	data.Daemon, data.Timer = o.Daemon, o.Timer

	file := path.Join("internal/kopf", data.Lower+"_handlers.go")
	if _, exists := in.Universe[file]; exists && !o.Force {
		return r, fmt.Errorf("%s exists already (use --force to overwrite it)", file)
	}
	handlers, err := render("handlers.go.tmpl", data)
	if err != nil {
		return r, err
	}
	r.write(file, handlers)

	if k.TypesFile == "" {
		r.note("%s.%s is not defined in this project: no test is scaffolded for it, and its handlers' results land in status only if its schema keeps them", k.Kind, k.Group)
		return r, nil
	}
	types, changed, kept := keepStatusFields(in.Universe[k.TypesFile], k.Kind)
	if changed {
		r.write(k.TypesFile, types)
	}
	if !kept {
		r.note("%s has no %sStatus type: the handlers' results land in status only if the CRD keeps unknown fields there", k.TypesFile, k.Kind)
	}
	data.StatusKept = kept
	test, err := render("handlers_test.go.tmpl", data)
	if err != nil {
		return r, err
	}
	r.write(path.Join("internal/kopf", data.Lower+"_handlers_test.go"), test)
	r.note("next: make manifests (the CRD keeps the handlers' results in status), then make kopf-test")
	return r, nil
}

// errNotInitialised is what the per-kind scaffolds say in a project
// without kopf-go.
var errNotInitialised = fmt.Errorf("%s is missing: add kopf-go to the project first, with `kubebuilder init --plugins go/v4,kopf.kopf.dev/v1-alpha` or, in an existing project, `kubebuilder edit --plugins kopf.kopf.dev/v1-alpha`", setupFile)
