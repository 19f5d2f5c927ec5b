package fields_test

import (
	"fmt"

	"github.com/kopf-go/kopf/pkg/fields"
)

// Dotted paths, read from a JSON-like body.
func ExampleResolve() {
	body := map[string]any{"spec": map[string]any{"replicas": 3}}
	v, ok := fields.Resolve(body, fields.Parse("spec.replicas"))
	_, missing := fields.Resolve(body, fields.Parse("spec.absent"))
	fmt.Println(v, ok, missing, fields.ParseAll("spec.a", "metadata.labels"))
	// Output:
	// 3 true false [spec.a metadata.labels]
}
