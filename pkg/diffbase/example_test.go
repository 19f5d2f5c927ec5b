package diffbase_test

import (
	"fmt"

	"github.com/kopf-go/kopf/pkg/diffbase"
)

// The essence of an object: what counts as its change (spec, labels,
// annotations), without status or the framework's own state.
func ExampleBuildEssence() {
	body := map[string]any{
		"metadata": map[string]any{"name": "kex-1", "labels": map[string]any{"app": "x"}, "resourceVersion": "7"},
		"spec":     map[string]any{"size": "small"},
		"status":   map[string]any{"ready": true},
	}
	fmt.Println(diffbase.BuildEssence(body, nil, nil))
	// Output:
	// map[metadata:map[labels:map[app:x]] spec:map[size:small]]
}
