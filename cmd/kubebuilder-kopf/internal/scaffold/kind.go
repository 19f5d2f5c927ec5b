package scaffold

import (
	"fmt"
	"path"
	"regexp"
	"strings"
	"unicode"
)

// kind is one resource kind as the per-kind templates need it.
type kind struct {
	// Kind is the Go type's name, e.g. Widget.
	Kind string
	// Name prefixes the Go identifiers and files of the kind: the kind, or
	// in a multigroup project the group and the kind (AppsWidget), since
	// internal/kopf is one package for all groups.
	Name string
	// Group is the API group as the API server knows it
	// (apps.example.com; "" for the core group), Version its version.
	Group, Version string
	// Plural is the resource name, for RBAC markers.
	Plural string
	// ImportPath and Alias import the Go package of the type.
	ImportPath, Alias string
	Namespaced        bool
	// TypesFile is the project's file that defines the type
	// (api/v1/widget_types.go), or "" when the type is not the project's
	// own (a built-in or external kind).
	TypesFile string
}

// lower is the kind's part of file names and handler ids (widget), as
// kubebuilder names its own files.
func (k kind) lower() string { return strings.ToLower(k.Name) }

// validKind is what kubebuilder accepts as a kind: a Go identifier that
// starts with a capital letter.
var validKind = regexp.MustCompile(`^[A-Z][A-Za-z0-9]*$`)

// coreGroups are the groups of Kubernetes' built-in kinds, whose types
// are in k8s.io/api, with the domain they have ("" for none), as
// kubebuilder knows them.
var coreGroups = map[string]string{
	"core": "", "apps": "", "batch": "", "autoscaling": "", "policy": "", "extensions": "",
	"admissionregistration": "k8s.io", "apiextensions": "k8s.io", "certificates": "k8s.io",
	"coordination": "k8s.io", "discovery": "k8s.io", "events": "k8s.io", "networking": "k8s.io",
	"node": "k8s.io", "rbac.authorization": "k8s.io", "scheduling": "k8s.io", "storage": "k8s.io",
}

// resolveKind finds where the type of a group, version and kind lives:
// PROJECT's entry says so when there is one (go/v4 adds it before this
// plugin runs); else the project's own package if it defines the kind,
// else k8s.io/api for a built-in group, else the project's own package.
func resolveKind(p Project, u map[string]string, group, version, kindName string) (kind, error) {
	if !validKind.MatchString(kindName) {
		return kind{}, fmt.Errorf("--kind %q: want a Go type name that starts with a capital letter, e.g. Widget", kindName)
	}
	if version == "" {
		return kind{}, fmt.Errorf("--version is required, e.g. --version v1")
	}
	k := kind{Kind: kindName, Name: kindName, Version: version, Namespaced: true}
	if p.MultiGroup && group != "" {
		k.Name = exported(group) + kindName
	}
	// The project's own package of the kind, as go/v4 lays it out.
	ownPath := p.Repo + "/api/" + version
	if p.MultiGroup && group != "" {
		ownPath = p.Repo + "/api/" + group + "/" + version
	}
	res, known := p.resource(group, version, kindName)
	domain, core := coreGroups[group]
	switch {
	case known && res.Path != "":
		k.ImportPath, domain, core = res.Path, res.Domain, res.Core
		if res.API != nil {
			k.Namespaced = res.API.Namespaced
		}
		k.Plural = res.Plural
	case core && u[typesFile(p.Repo, ownPath, kindName)] == "":
		k.ImportPath = "k8s.io/api/" + strings.Split(group, ".")[0] + "/" + version
	default:
		k.ImportPath, domain, core = ownPath, p.Domain, false
	}
	switch {
	case core && group == "core":
		k.Group = ""
	case domain == "":
		k.Group = group
	case group == "":
		k.Group = domain
	default:
		k.Group = group + "." + domain
	}
	if k.Plural == "" {
		k.Plural = plural(strings.ToLower(kindName))
	}
	k.Alias = importAlias(group, version)
	if file := typesFile(p.Repo, k.ImportPath, kindName); u[file] != "" {
		k.TypesFile = file
	}
	return k, nil
}

// typesFile is where go/v4 defines a kind in a package of the project:
// api/v1/widget_types.go; "" for a package elsewhere.
func typesFile(repo, pkg, kindName string) string {
	rel, ok := strings.CutPrefix(pkg, repo+"/")
	if !ok {
		return ""
	}
	return path.Join(rel, strings.ToLower(kindName)+"_types.go")
}

// importAlias names the type's package as go/v4 does in cmd/main.go:
// group and version run together (appsv1).
func importAlias(group, version string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(group + version) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(r)
		}
	}
	alias := b.String()
	if alias == "" || unicode.IsDigit(rune(alias[0])) {
		alias = "api" + alias
	}
	return alias
}

// exported capitalises the first letter of each part of a group
// (rbac.authorization -> RbacAuthorization), for Go identifiers.
func exported(group string) string {
	var b strings.Builder
	for _, part := range strings.FieldsFunc(group, func(r rune) bool { return r == '.' || r == '-' }) {
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	return b.String()
}

// plural is the regular English plural that kubebuilder gives resources
// without a --plural of their own; an irregular one is in PROJECT.
func plural(s string) string {
	switch {
	case strings.HasSuffix(s, "s"), strings.HasSuffix(s, "x"), strings.HasSuffix(s, "z"),
		strings.HasSuffix(s, "ch"), strings.HasSuffix(s, "sh"):
		return s + "es"
	case strings.HasSuffix(s, "y") && len(s) > 1 && !strings.ContainsRune("aeiou", rune(s[len(s)-2])):
		return s[:len(s)-1] + "ies"
	}
	return s + "s"
}
