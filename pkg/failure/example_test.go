package failure_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/kopf-go/kopf/pkg/failure"
)

// The engine finds a handler's failure in the error's chain.
func ExampleTemporaryError() {
	err := fmt.Errorf("create the database: %w", &failure.TemporaryError{Err: errors.New("quota"), Delay: time.Minute})
	var t *failure.TemporaryError
	fmt.Println(errors.As(err, &t), t.Delay, failure.ErrorsIgnored)
	// Output:
	// true 1m0s ignored
}
