package filter_test

import (
	"fmt"

	"github.com/kopf-go/kopf/pkg/filter"
)

// Each filter tests one value, given whether it is there at all.
func Example() {
	fmt.Println(filter.Present.Match(nil, true), filter.Absent.Match(nil, true))
	fmt.Println(filter.Equals("gold").Match("gold", true), filter.Equals("gold").Match("silver", true))
	long := filter.Check(func(v any) bool { s, _ := v.(string); return len(s) > 3 })
	fmt.Println(long.Match("silver", true), long.Match(nil, false))
	// Output:
	// true false
	// true false
	// true false
}
