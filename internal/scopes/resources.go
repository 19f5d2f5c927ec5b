package scopes

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Resource is one resource that the API server serves, as discovery
// describes it.
type Resource struct {
	Group, Version string
	Kind           string
	Plural         string
	Singular       string
	ShortNames     []string
	Categories     []string
	Namespaced     bool
	// Preferred: the version is its group's preferred one.
	Preferred bool
	Verbs     []string
}

// GVK is the resource's group, version and kind.
func (r Resource) GVK() schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: r.Group, Version: r.Version, Kind: r.Kind}
}

func (r Resource) String() string {
	if r.Group == "" {
		return r.Plural + "." + r.Version
	}
	return r.Plural + "." + r.Version + "." + r.Group
}

// Selector names resources as kubectl and Kopf's resource decorators do:
// by any of their names (kind, plural, singular, short name), optionally
// in a group and at a version (else the group's preferred version); or by
// a category; or every resource.
type Selector struct {
	// Group is the API group; with HasGroup, "" is the core group.
	Group    string
	HasGroup bool
	// Version is the API version; "" is the preferred one.
	Version string
	// Name is any of the resource's names.
	Name string
	// Category is a category the resource is in (e.g. "all").
	Category string
	// Everything selects every resource, but the Events.
	Everything bool
}

// groupVersionName is Kopf's pattern of "name.version[.group]", where the
// version is a conventional one (v1, v2beta1, ...).
var groupVersionName = regexp.MustCompile(`^[^.]*\.v\d+(?:(?:alpha|beta)\d+)?(?:\..*)?$`)

// ParseSelector reads Kopf's positional forms of a resource:
//
//	"kopfexamples"                  any name, any group, preferred version
//	"kopfexamples.kopf.dev"         name.group
//	"deployments.v1.apps", "pods.v1"  name.version[.group]
//	"kopf.dev", "kopfexamples"      group, name
//	"kopf.dev/v1", "kopfexamples"   group/version, name
//	"v1", "pods"                    the core group's version, name
//	"apps", "v1", "deployments"     group, version, name
func ParseSelector(args ...string) (Selector, error) {
	if slices.Contains(args, "") {
		return Selector{}, fmt.Errorf("resource %q: names must not be empty", args)
	}
	var s Selector
	switch len(args) {
	case 1:
		a := args[0]
		switch {
		case groupVersionName.MatchString(a):
			parts := strings.SplitN(a, ".", 3)
			s.Name, s.Version = parts[0], parts[1]
			s.HasGroup = true // "pods.v1" is the core group
			if len(parts) == 3 {
				s.Group = parts[2]
			}
		case strings.Contains(a, "."):
			s.Name, s.Group, _ = strings.Cut(a, ".")
			s.HasGroup = true
		default:
			s.Name = a
		}
	case 2:
		switch {
		case strings.Contains(args[0], "/"):
			i := strings.LastIndex(args[0], "/")
			s.Group, s.Version = args[0][:i], args[0][i+1:]
		case args[0] == "v1":
			s.Version = "v1"
		default:
			s.Group = args[0]
		}
		s.HasGroup, s.Name = true, args[1]
	case 3:
		s = Selector{Group: args[0], HasGroup: true, Version: args[1], Name: args[2]}
	default:
		return Selector{}, fmt.Errorf("resource %q: give one to three names", args)
	}
	return s, nil
}

// Specific tells whether the selector names one resource (by a name), as
// opposed to a category or everything.
func (s Selector) Specific() bool { return s.Name != "" }

func (s Selector) String() string {
	switch {
	case s.Everything:
		return "every resource"
	case s.Category != "":
		return "category " + s.Category
	}
	var parts []string
	parts = append(parts, s.Name)
	if s.Version != "" {
		parts = append(parts, s.Version)
	}
	if s.HasGroup && s.Group != "" {
		parts = append(parts, s.Group)
	}
	return strings.Join(parts, ".")
}

// Matches tells whether the selector selects the resource. Without a
// version, only a group's preferred version is selected.
func (s Selector) Matches(r Resource) bool {
	if s.HasGroup && s.Group != r.Group {
		return false
	}
	if s.Version == "" && !r.Preferred || s.Version != "" && s.Version != r.Version {
		return false
	}
	switch {
	case s.Everything:
		return !isEvents(r)
	case s.Category != "":
		return slices.Contains(r.Categories, s.Category)
	}
	return s.Name == r.Kind || s.Name == r.Plural || s.Name == r.Singular || slices.Contains(r.ShortNames, s.Name)
}

// isEvents: the Events are never selected by every resource: handling
// them would make Events, which would be handled, and so on.
func isEvents(r Resource) bool {
	return r.Plural == "events" && (r.Group == "" || r.Group == "events.k8s.io")
}

// ErrAmbiguous is the error of a selector that names more than one
// resource.
var ErrAmbiguous = errors.New("the resource is ambiguous; name its group")

// Select returns the resources the selector selects that can be watched
// (they have the list and watch verbs). As in kubectl, a name that the
// core group serves means the core group's resource ("pods" is never
// metrics.k8s.io's); a name that still selects more than one resource is
// ErrAmbiguous, naming the candidates.
func (s Selector) Select(all []Resource) ([]Resource, error) {
	var out []Resource
	for _, r := range all {
		if s.Matches(r) && slices.Contains(r.Verbs, "list") && slices.Contains(r.Verbs, "watch") {
			out = append(out, r)
		}
	}
	if !s.Specific() || len(out) < 2 {
		return out, nil
	}
	core := slices.DeleteFunc(slices.Clone(out), func(r Resource) bool { return r.Group != "" })
	if len(core) > 0 {
		out = core
	}
	if len(out) > 1 {
		names := make([]string, len(out))
		for i, r := range out {
			names[i] = r.String()
		}
		return nil, fmt.Errorf("%q selects %s: %w", s.String(), strings.Join(names, ", "), ErrAmbiguous)
	}
	return out, nil
}
