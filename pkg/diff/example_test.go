package diff_test

import (
	"fmt"

	"github.com/kopf-go/kopf/pkg/diff"
)

// The changes between two states, as Kopf lists and logs them: additions,
// removals, then changes, each by field.
func ExampleCompute() {
	old := map[string]any{"spec": map[string]any{"size": "small", "gone": 1}}
	cur := map[string]any{"spec": map[string]any{"size": "large", "new": true}}
	for _, item := range diff.Compute(old, cur) {
		fmt.Println(item.Op, item.Field, item.Old, item.New)
	}
	// Output:
	// add spec.new <nil> true
	// remove spec.gone 1 <nil>
	// change spec.size small large
}
