package progress_test

import (
	"encoding/json"
	"fmt"

	"github.com/kopf-go/kopf/pkg/patch"
	"github.com/kopf-go/kopf/pkg/progress"
)

// A handler's progress record, written as Kopf writes it into an
// annotation of the object.
func ExampleAnnotations_Store() {
	p := patch.New()
	progress.NewAnnotations().Store(map[string]any{}, p, "create_fn", progress.Record{Retries: 1, Success: true})
	out, _ := json.Marshal(p)
	fmt.Println(string(out))
	// Output:
	// {"metadata":{"annotations":{"kopf.zalando.org/create_fn":"{\"retries\":1,\"success\":true,\"failure\":false}"}}}
}
