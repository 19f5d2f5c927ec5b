package cause_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/kopf-go/kopf/pkg/cause"
)

// A daemon's context ends with the reason why it stops; errors.Is tells
// each of the reasons that combine.
func ExampleStopReason() {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(cause.StopResourceDeleted | cause.StopCancelled)
	why := context.Cause(ctx)
	fmt.Println(why, errors.Is(why, cause.StopResourceDeleted), errors.Is(why, cause.StopOperatorExiting))
	// Output:
	// stopped: RESOURCE_DELETED|DAEMON_CANCELLED true false
}
