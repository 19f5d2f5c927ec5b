package scaffold

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestResolveKind(t *testing.T) {
	namespaced := func(n bool) *struct {
		Namespaced bool `json:"namespaced"`
	} {
		return &struct {
			Namespaced bool `json:"namespaced"`
		}{n}
	}
	own := map[string]string{"api/v1/widget_types.go": "package v1", "api/apps/v1/widget_types.go": "package v1"}
	tests := []struct {
		name                 string
		project              Project
		group, version, kind string
		want                 kind
		wantErr              string
	}{
		{
			name: "the project's kind, from PROJECT",
			project: Project{Repo: "example.com/demo", Domain: "example.com", Resources: []Resource{
				{Group: "apps", Domain: "example.com", Version: "v1", Kind: "Widget", Path: "example.com/demo/api/v1", API: namespaced(true)}}},
			group: "apps", version: "v1", kind: "Widget",
			want: kind{Kind: "Widget", Name: "Widget", Group: "apps.example.com", Version: "v1", Plural: "widgets",
				ImportPath: "example.com/demo/api/v1", Alias: "appsv1", Namespaced: true, TypesFile: "api/v1/widget_types.go"},
		},
		{
			name: "a cluster-scoped kind with an irregular plural",
			project: Project{Repo: "example.com/demo", Domain: "example.com", Resources: []Resource{
				{Group: "infra", Domain: "example.com", Version: "v1alpha1", Kind: "Cactus", Plural: "cacti", Path: "example.com/demo/api/v1alpha1", API: namespaced(false)}}},
			group: "infra", version: "v1alpha1", kind: "Cactus",
			want: kind{Kind: "Cactus", Name: "Cactus", Group: "infra.example.com", Version: "v1alpha1", Plural: "cacti",
				ImportPath: "example.com/demo/api/v1alpha1", Alias: "infrav1alpha1"},
		},
		{
			name:    "a multigroup project's kind, not in PROJECT",
			project: Project{Repo: "example.com/demo", Domain: "example.com", MultiGroup: true},
			group:   "apps", version: "v1", kind: "Widget",
			want: kind{Kind: "Widget", Name: "AppsWidget", Group: "apps.example.com", Version: "v1", Plural: "widgets",
				ImportPath: "example.com/demo/api/apps/v1", Alias: "appsv1", Namespaced: true, TypesFile: "api/apps/v1/widget_types.go"},
		},
		{
			name:    "a built-in kind, not in PROJECT",
			project: Project{Repo: "example.com/demo", Domain: "example.com"},
			group:   "networking", version: "v1", kind: "Ingress",
			want: kind{Kind: "Ingress", Name: "Ingress", Group: "networking.k8s.io", Version: "v1", Plural: "ingresses",
				ImportPath: "k8s.io/api/networking/v1", Alias: "networkingv1", Namespaced: true},
		},
		{
			name: "a built-in kind of the core group, from PROJECT",
			project: Project{Repo: "example.com/demo", Domain: "example.com", Resources: []Resource{
				{Group: "core", Version: "v1", Kind: "ConfigMap", Path: "k8s.io/api/core/v1", Core: true}}},
			group: "core", version: "v1", kind: "ConfigMap",
			want: kind{Kind: "ConfigMap", Name: "ConfigMap", Group: "", Version: "v1", Plural: "configmaps",
				ImportPath: "k8s.io/api/core/v1", Alias: "corev1", Namespaced: true},
		},
		{name: "a lower-case kind", project: project(), group: "apps", version: "v1", kind: "widget",
			wantErr: `--kind "widget": want a Go type name that starts with a capital letter, e.g. Widget`},
		{name: "no version", project: project(), group: "apps", kind: "Widget", wantErr: "--version is required, e.g. --version v1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := resolveKind(tt.project, own, tt.group, tt.version, tt.kind)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("resolveKind() error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(kind{})); diff != "" {
				t.Errorf("resolveKind() -want +got:\n%s", diff)
			}
		})
	}
}

func TestPlural(t *testing.T) {
	for in, want := range map[string]string{
		"widget": "widgets", "policy": "policies", "gateway": "gateways", "box": "boxes",
		"class": "classes", "batch": "batches", "mesh": "meshes", "quiz": "quizes",
	} {
		if got := plural(in); got != want {
			t.Errorf("plural(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseProject(t *testing.T) {
	got, err := ParseProject(map[string]any{
		"repo": "example.com/demo", "domain": "example.com", "multigroup": true, "layout": []any{"go.kubebuilder.io/v4"},
		"resources": []any{map[string]any{"group": "apps", "kind": "Widget", "version": "v1", "path": "example.com/demo/api/apps/v1",
			"api": map[string]any{"crdVersion": "v1", "namespaced": true}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got.Repo != "example.com/demo" || !got.MultiGroup || len(got.Resources) != 1 || got.Resources[0].API == nil || !got.Resources[0].API.Namespaced {
		t.Errorf("ParseProject() = %+v", got)
	}
	if _, err := ParseProject(nil); err == nil {
		t.Error("ParseProject(nil): want an error")
	}
	if _, err := ParseProject(map[string]any{"domain": "example.com"}); err == nil {
		t.Error("ParseProject() without a repo: want an error")
	}
}
