package scopes

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseSelector(t *testing.T) {
	tests := []struct {
		args []string
		want Selector
	}{
		{[]string{"kopfexamples"}, Selector{Name: "kopfexamples"}},
		{[]string{"kopfexamples.kopf.dev"}, Selector{Name: "kopfexamples", Group: "kopf.dev", HasGroup: true}},
		{[]string{"deployments.v1.apps"}, Selector{Name: "deployments", Version: "v1", Group: "apps", HasGroup: true}},
		{[]string{"kopfexamples.v1beta1.kopf.dev"}, Selector{Name: "kopfexamples", Version: "v1beta1", Group: "kopf.dev", HasGroup: true}},
		{[]string{"pods.v1"}, Selector{Name: "pods", Version: "v1", HasGroup: true}},
		{[]string{"kopf.dev", "kopfexamples"}, Selector{Name: "kopfexamples", Group: "kopf.dev", HasGroup: true}},
		{[]string{"kopf.dev/v1", "kopfexamples"}, Selector{Name: "kopfexamples", Version: "v1", Group: "kopf.dev", HasGroup: true}},
		{[]string{"v1", "pods"}, Selector{Name: "pods", Version: "v1", HasGroup: true}},
		{[]string{"apps", "v1", "deployments"}, Selector{Name: "deployments", Version: "v1", Group: "apps", HasGroup: true}},
	}
	for _, tt := range tests {
		got, err := ParseSelector(tt.args...)
		if err != nil {
			t.Errorf("ParseSelector(%q): %v", tt.args, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("ParseSelector(%q) -want +got:\n%s", tt.args, diff)
		}
	}
	for _, bad := range [][]string{nil, {""}, {"apps", ""}, {"a", "b", "c", "d"}} {
		if _, err := ParseSelector(bad...); err == nil {
			t.Errorf("ParseSelector(%q) = nil error, want one", bad)
		}
	}
}

// cluster is what discovery could say of a cluster with the example CRD,
// a second version of it, the metrics API and a CRD that reuses a name.
var cluster = []Resource{
	{Group: "", Version: "v1", Kind: "Pod", Plural: "pods", Singular: "pod", ShortNames: []string{"po"}, Categories: []string{"all"}, Namespaced: true, Preferred: true, Verbs: watchable},
	{Group: "", Version: "v1", Kind: "Event", Plural: "events", Singular: "event", ShortNames: []string{"ev"}, Namespaced: true, Preferred: true, Verbs: watchable},
	{Group: "", Version: "v1", Kind: "Binding", Plural: "bindings", Namespaced: true, Preferred: true, Verbs: []string{"create"}},
	{Group: "events.k8s.io", Version: "v1", Kind: "Event", Plural: "events", Singular: "event", ShortNames: []string{"ev"}, Namespaced: true, Preferred: true, Verbs: watchable},
	{Group: "apps", Version: "v1", Kind: "Deployment", Plural: "deployments", Singular: "deployment", ShortNames: []string{"deploy"}, Categories: []string{"all"}, Namespaced: true, Preferred: true, Verbs: watchable},
	{Group: "extras.example.com", Version: "v1", Kind: "Deployment", Plural: "deployments", Singular: "deployment", Namespaced: true, Preferred: true, Verbs: watchable},
	{Group: "metrics.k8s.io", Version: "v1beta1", Kind: "PodMetrics", Plural: "pods", Singular: "", Namespaced: true, Preferred: true, Verbs: []string{"get", "list", "watch"}},
	{Group: "kopf.dev", Version: "v1", Kind: "KopfExample", Plural: "kopfexamples", Singular: "kopfexample", ShortNames: []string{"kex"}, Categories: []string{"kopf"}, Namespaced: true, Preferred: true, Verbs: watchable},
	{Group: "kopf.dev", Version: "v1beta1", Kind: "KopfExample", Plural: "kopfexamples", Singular: "kopfexample", ShortNames: []string{"kex"}, Categories: []string{"kopf"}, Namespaced: true, Verbs: watchable},
}

var watchable = []string{"get", "list", "watch", "patch"}

func TestSelectorSelect(t *testing.T) {
	tests := []struct {
		name     string
		selector Selector
		want     []string
		err      string
	}{
		{"plural", Selector{Name: "kopfexamples"}, []string{"kopfexamples.v1.kopf.dev"}, ""},
		{"singular", Selector{Name: "kopfexample"}, []string{"kopfexamples.v1.kopf.dev"}, ""},
		{"kind", Selector{Name: "KopfExample"}, []string{"kopfexamples.v1.kopf.dev"}, ""},
		{"short name", Selector{Name: "kex"}, []string{"kopfexamples.v1.kopf.dev"}, ""},
		{"a version that is not preferred", mustParse(t, "kopfexamples.v1beta1.kopf.dev"), []string{"kopfexamples.v1beta1.kopf.dev"}, ""},
		{"core wins over another group", Selector{Name: "pods"}, []string{"pods.v1"}, ""},
		{"core by v1", mustParse(t, "v1", "pods"), []string{"pods.v1"}, ""},
		{"another group by name", mustParse(t, "pods.metrics.k8s.io"), []string{"pods.v1beta1.metrics.k8s.io"}, ""},
		{"ambiguous", Selector{Name: "deployments"}, nil, "deployments.v1.apps, deployments.v1.extras.example.com"},
		{"ambiguity resolved by the group", mustParse(t, "apps", "deployments"), []string{"deployments.v1.apps"}, ""},
		{"category", Selector{Category: "all"}, []string{"pods.v1", "deployments.v1.apps"}, ""},
		{"everything but the events and the unwatchable", Selector{Everything: true},
			[]string{"pods.v1", "deployments.v1.apps", "deployments.v1.extras.example.com", "pods.v1beta1.metrics.k8s.io", "kopfexamples.v1.kopf.dev"}, ""},
		{"a name nobody serves", Selector{Name: "nothings"}, nil, ""},
		{"no list or watch", Selector{Name: "bindings"}, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.selector.Select(cluster)
			if tt.err != "" {
				if !errors.Is(err, ErrAmbiguous) || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Select() error = %v, want ErrAmbiguous naming %s", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, r := range got {
				names = append(names, r.String())
			}
			if diff := cmp.Diff(tt.want, names); diff != "" {
				t.Errorf("Select() -want +got:\n%s", diff)
			}
		})
	}
}

func mustParse(t *testing.T, args ...string) Selector {
	t.Helper()
	s, err := ParseSelector(args...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
