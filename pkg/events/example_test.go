package events_test

import (
	"fmt"

	"github.com/kopf-go/kopf/pkg/events"
)

// The gates of Events: from Warning on, only Warnings and Errors are
// posted.
func ExampleSettings_Allows() {
	s := events.Settings{Level: events.LevelWarning}
	fmt.Println(s.Allows(events.LevelInfo), s.Allows(events.LevelError), events.Settings{Disabled: true}.Allows(events.LevelError))
	// Output:
	// false true false
}
