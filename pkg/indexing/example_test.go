package indexing_test

import (
	"fmt"

	"github.com/kopf-go/kopf/pkg/indexing"
)

// An index maps keys to the values that objects contribute, as an index
// handler's results fill it.
func ExampleIndices() {
	var indices indexing.Indices
	byPhase := indices.Ensure("pods_by_phase")
	byPhase.Replace("ns/web-1", map[any]any{"Running": "web-1"})
	byPhase.Replace("ns/web-2", map[any]any{"Pending": "web-2"})
	byPhase.Replace("ns/web-2", map[any]any{"Running": "web-2"})
	fmt.Println(indices.Get("pods_by_phase").Get("Running"), indices.Get("typo").Len())
	// Output:
	// [web-1 web-2] 0
}
