package scopes

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPatternMatch(t *testing.T) {
	tests := []struct {
		pattern string
		matched []string
		not     []string
	}{
		// Kopf's docs/scopes.rst: the first glob is decisive, the
		// rightmost matching glob wins.
		{"myapp-*,!*-pr-*,*-pr-123",
			[]string{"myapp-live", "myapp-pr-123"},
			[]string{"myapp-pr-456", "otherapp-live", "otherapp-pr-123"}},
		// Kopf's match_namespace docstring: a leading negation implies *,
		// so that the last glob re-includes any namespace.
		{"!*-pr-*, *pr-123",
			[]string{"myapp-test", "myapp-live", "myapp-pr-123", "anyapp-anything", "otherapp-pr-123"},
			[]string{"myapp-pr-456"}},
		{"*-pr-123-*", []string{"app-pr-123-x", "-pr-123-"}, []string{"app-pr-1234", "pr-123-x"}},
		{"!*-pr-123-*", []string{"default", "app-pr-124-x"}, []string{"app-pr-123-x"}},
		{"ns1", []string{"ns1"}, []string{"ns", "ns12", "xns1"}},
		{" ns1 ", []string{"ns1"}, []string{"ns"}},
		{"ns?", []string{"ns1", "nsx"}, []string{"ns", "ns12"}},
		{"n*1", []string{"ns1", "n1", "nabc1"}, []string{"ns2"}},
		{"??1", []string{"ns1"}, []string{"s1", "nss1"}},
		{"ns[0-4]", []string{"ns0", "ns4"}, []string{"ns5"}},
		{"ns[!0-4]", []string{"ns5"}, []string{"ns0"}},
		// Later inclusive globs only put back what the first matched.
		{"ns1,ns2", []string{"ns1"}, []string{"ns2"}},
		{"ns*,!ns1", []string{"ns2"}, []string{"ns1"}},
		{"ns*,!ns1,ns1", []string{"ns1", "ns2"}, []string{"other"}},
		{"ns*,!ns*,ns1", []string{"ns1"}, []string{"ns2"}},
		{"!ns1", []string{"ns2", "default"}, []string{"ns1"}},
		{"!ns*", []string{"default"}, []string{"ns1"}},
	}
	for _, tt := range tests {
		p, err := ParsePattern(tt.pattern)
		if err != nil {
			t.Fatalf("ParsePattern(%q): %v", tt.pattern, err)
		}
		for _, ns := range tt.matched {
			if !p.Match(ns) {
				t.Errorf("%q does not match %q, want a match", tt.pattern, ns)
			}
		}
		for _, ns := range tt.not {
			if p.Match(ns) {
				t.Errorf("%q matches %q, want none", tt.pattern, ns)
			}
		}
	}
}

func TestParsePatternRefusesMalformedPatterns(t *testing.T) {
	for _, text := range []string{"", " ", "ns1,", "!", "ns1,!", "ns[", "a,,b"} {
		if _, err := ParsePattern(text); err == nil {
			t.Errorf("ParsePattern(%q) = nil error, want one", text)
		}
	}
}

func TestNamespaces(t *testing.T) {
	tests := []struct {
		patterns           []string
		clusterWide, exact bool
		names, globbed     []string
		existing, selected []string
	}{
		{patterns: nil, clusterWide: true,
			existing: []string{"b", "a"}, selected: []string{"a", "b"}},
		{patterns: []string{"ns2", "ns1", "ns2"}, exact: true, names: []string{"ns1", "ns2"},
			existing: []string{"ns1", "ns3"}, selected: []string{"ns1"}},
		// Several --namespace flags: a namespace served by any of them.
		{patterns: []string{"app-*,!app-skip", "ops"}, names: []string{"ops"}, globbed: []string{"app-*,!app-skip"},
			existing: []string{"app-1", "app-skip", "ops", "default"}, selected: []string{"app-1", "ops"}},
		// Kopf's fallback leaves out every pattern with a glob character.
		{patterns: []string{"ns1,ns2", "n?s", "!x"}, globbed: []string{"ns1,ns2", "n?s", "!x"},
			existing: []string{"ns1", "ns2", "nxs", "x"}, selected: []string{"ns1", "ns2", "nxs"}},
	}
	for _, tt := range tests {
		n, err := ParseNamespaces(tt.patterns)
		if err != nil {
			t.Fatalf("ParseNamespaces(%q): %v", tt.patterns, err)
		}
		if got := n.ClusterWide(); got != tt.clusterWide {
			t.Errorf("%q: ClusterWide() = %v, want %v", tt.patterns, got, tt.clusterWide)
		}
		if got := n.Exact(); got != tt.exact {
			t.Errorf("%q: Exact() = %v, want %v", tt.patterns, got, tt.exact)
		}
		if diff := cmp.Diff(tt.names, n.Names()); diff != "" {
			t.Errorf("%q: Names() -want +got:\n%s", tt.patterns, diff)
		}
		if diff := cmp.Diff(tt.globbed, n.Globbed()); diff != "" {
			t.Errorf("%q: Globbed() -want +got:\n%s", tt.patterns, diff)
		}
		if diff := cmp.Diff(tt.selected, n.Select(tt.existing)); diff != "" {
			t.Errorf("%q: Select(%q) -want +got:\n%s", tt.patterns, tt.existing, diff)
		}
	}
}

func TestParseNamespacesNamesEveryBadPattern(t *testing.T) {
	_, err := ParseNamespaces([]string{"ok", "", "x["})
	if err == nil {
		t.Fatal("ParseNamespaces() = nil error, want one")
	}
	for _, want := range []string{`""`, `"x["`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error %q does not name the pattern %s", err, want)
		}
	}
}
