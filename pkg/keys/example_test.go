package keys_test

import (
	"fmt"

	"github.com/kopf-go/kopf/pkg/keys"
)

// Annotation keys as Kopf forms them under a prefix.
func ExampleConvention() {
	c := keys.Convention{Prefix: keys.DefaultPrefix, V1: true}
	fmt.Println(c.V2Key("create_fn"))
	fmt.Println(c.V2Key("create_fn/item1"))
	// Output:
	// kopf.zalando.org/create_fn
	// kopf.zalando.org/create_fn.item1
}
