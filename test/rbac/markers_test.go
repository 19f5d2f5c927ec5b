package rbac

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kopf-go/kopf/test/testenv"
)

// pluginTemplates are the kubebuilder plugin's templates that carry RBAC
// markers: the engine's (setup.go) and each kind's (<kind>_handlers.go).
var pluginTemplates = []string{"setup.go.tmpl", "handlers.go.tmpl"}

// pluginRole is the ClusterRole that controller-gen would make of the
// plugin's RBAC markers, for KopfExample as the kind: one rule per marker.
func pluginRole(t *testing.T) *unstructured.Unstructured {
	t.Helper()
	var rules []any
	for _, name := range pluginTemplates {
		data, err := os.ReadFile(filepath.Join(testenv.Root(), "cmd", "kubebuilder-kopf", "internal", "scaffold", "templates", name))
		if err != nil {
			t.Fatal(err)
		}
		text := strings.NewReplacer("{{.RBACGroup}}", "kopf.dev", "{{.Plural}}", "kopfexamples").Replace(string(data))
		for _, line := range strings.Split(text, "\n") {
			_, marker, ok := strings.Cut(line, "// +kubebuilder:rbac:")
			if !ok {
				continue
			}
			rule, err := markerRule(marker)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			rules = append(rules, rule)
		}
	}
	if len(rules) == 0 {
		t.Fatalf("the templates %q have no RBAC markers", pluginTemplates)
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
		"metadata": map[string]any{"name": "kopf-plugin-manager"},
		"rules":    rules,
	}}
}

// markerRule is the rule of one marker's arguments
// (groups=...,resources=...,verbs=..., lists separated by ';').
func markerRule(args string) (map[string]any, error) {
	rule := map[string]any{}
	for _, arg := range strings.Split(args, ",") {
		key, value, ok := strings.Cut(strings.TrimSpace(arg), "=")
		if !ok {
			return nil, &markerError{args}
		}
		var list []any
		for _, v := range strings.Split(value, ";") {
			list = append(list, strings.Trim(v, `"`))
		}
		switch key {
		case "groups":
			rule["apiGroups"] = list
		case "resources", "verbs", "resourceNames":
			rule[key] = list
		default:
			return nil, &markerError{args}
		}
	}
	return rule, nil
}

type markerError struct{ marker string }

func (e *markerError) Error() string { return "cannot read the RBAC marker " + e.marker }
