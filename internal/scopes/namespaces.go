// Package scopes says what an operator serves: the namespaces that match
// its patterns, as Kopf's --namespace takes them.
package scopes

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
)

// Pattern is one namespace pattern as Kopf reads one --namespace value:
// comma-separated globs (with * and ?, and [...] classes as in fnmatch),
// each inclusive or, with a leading !, exclusive. The first glob is
// decisive: a namespace it does not match is not matched at all. The
// later globs are applied left to right, so the rightmost that matches
// wins: an exclusive glob takes a namespace out, an inclusive one puts a
// namespace that the first glob matched back in. A pattern that starts
// with a negation starts with an implied *.
type Pattern struct {
	text  string
	globs []glob
}

type glob struct {
	expr    string
	negated bool
}

// globChars are the characters that make a pattern more than one name.
const globChars = "*?[!,"

// ParsePattern parses one pattern; empty globs and malformed classes are
// errors.
func ParsePattern(text string) (Pattern, error) {
	p := Pattern{text: text}
	for i, part := range strings.Split(text, ",") {
		part = strings.TrimSpace(part)
		g := glob{expr: part}
		if rest, ok := strings.CutPrefix(part, "!"); ok {
			g = glob{expr: strings.TrimSpace(rest), negated: true}
		}
		if g.expr == "" {
			return Pattern{}, fmt.Errorf("namespace pattern %q: glob %d is empty", text, i+1)
		}
		// fnmatch writes a negated class as [!...], path.Match as [^...].
		g.expr = strings.ReplaceAll(g.expr, "[!", "[^")
		if _, err := path.Match(g.expr, ""); err != nil {
			return Pattern{}, fmt.Errorf("namespace pattern %q: glob %q: %w", text, part, err)
		}
		if i == 0 && g.negated {
			p.globs = append(p.globs, glob{expr: "*"})
		}
		p.globs = append(p.globs, g)
	}
	return p, nil
}

// Match tells whether the namespace matches the pattern.
func (p Pattern) Match(namespace string) bool {
	if len(p.globs) == 0 {
		return false
	}
	first := matches(p.globs[0].expr, namespace)
	matched := first
	for _, g := range p.globs[1:] {
		if g.negated {
			matched = matched && !matches(g.expr, namespace)
		} else {
			matched = matched || (first && matches(g.expr, namespace))
		}
	}
	return matched
}

// matches is path.Match without its error, which ParsePattern has ruled
// out.
func matches(expr, name string) bool {
	ok, _ := path.Match(expr, name)
	return ok
}

// Name is the one namespace the pattern names, if it is a plain name.
func (p Pattern) Name() (string, bool) {
	if strings.ContainsAny(p.text, globChars) {
		return "", false
	}
	return strings.TrimSpace(p.text), true
}

func (p Pattern) String() string { return p.text }

// Namespaces is what an operator serves: the whole cluster (the zero
// value), or every namespace that matches any of its patterns (one per
// --namespace flag).
type Namespaces struct {
	patterns []Pattern
}

// ErrNoNamespaces is the error of patterns that name no namespace once
// the globs are set aside: without the permission to list namespaces,
// nothing is left to serve.
var ErrNoNamespaces = errors.New("no namespace is named exactly")

// ParseNamespaces parses the patterns; none means the whole cluster.
func ParseNamespaces(patterns []string) (Namespaces, error) {
	var n Namespaces
	var errs []error
	for _, text := range patterns {
		p, err := ParsePattern(text)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		n.patterns = append(n.patterns, p)
	}
	return n, errors.Join(errs...)
}

// ClusterWide tells whether the whole cluster is served.
func (n Namespaces) ClusterWide() bool { return len(n.patterns) == 0 }

// Match tells whether a namespace is served.
func (n Namespaces) Match(namespace string) bool {
	if n.ClusterWide() {
		return true
	}
	return slices.ContainsFunc(n.patterns, func(p Pattern) bool { return p.Match(namespace) })
}

// Names are the namespaces named exactly, sorted, without duplicates.
func (n Namespaces) Names() []string {
	var names []string
	for _, p := range n.patterns {
		if name, ok := p.Name(); ok {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// Globbed are the patterns that are more than one name: those that need
// the namespaces to be listed and watched.
func (n Namespaces) Globbed() []string {
	var out []string
	for _, p := range n.patterns {
		if _, ok := p.Name(); !ok {
			out = append(out, p.text)
		}
	}
	return out
}

// Exact tells whether every pattern is one name: the served namespaces
// are then known without listing any.
func (n Namespaces) Exact() bool { return !n.ClusterWide() && len(n.Globbed()) == 0 }

// Select returns the served namespaces among the given ones, sorted.
func (n Namespaces) Select(existing []string) []string {
	var out []string
	for _, ns := range existing {
		if n.Match(ns) {
			out = append(out, ns)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Patterns are the patterns as given.
func (n Namespaces) Patterns() []string {
	out := make([]string, len(n.patterns))
	for i, p := range n.patterns {
		out[i] = p.text
	}
	return out
}
