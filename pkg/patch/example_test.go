package patch_test

import (
	"encoding/json"
	"fmt"

	"github.com/kopf-go/kopf/pkg/patch"
)

// A handler's changes to its object, as one JSON merge patch: a removal
// is a null.
func Example() {
	p := patch.New()
	p.SetLabel("tier", "gold")
	p.RemoveAnnotation("obsolete")
	p.MergeStatus("summary", map[string]any{"ready": true})
	v, _ := p.Get("metadata", "labels", "tier")
	out, _ := json.Marshal(p)
	fmt.Println(v)
	fmt.Println(string(out))
	// Output:
	// gold
	// {"metadata":{"annotations":{"obsolete":null},"labels":{"tier":"gold"}},"status":{"summary":{"ready":true}}}
}
