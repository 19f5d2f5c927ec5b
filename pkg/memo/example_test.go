package memo_test

import (
	"fmt"

	"github.com/kopf-go/kopf/pkg/memo"
)

// A memo keeps values between a handler's calls, safe for concurrent use.
func ExampleMemo_Update() {
	var m memo.Memo
	for range 3 {
		m.Update("seen", func(v any, ok bool) any {
			n, _ := v.(int)
			return n + 1
		})
	}
	v, _ := m.Get("seen")
	fmt.Println(v, m.Keys())
	// Output:
	// 3 [seen]
}
