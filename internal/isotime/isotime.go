// Package isotime writes and reads timestamps as Kopf does: ISO 8601 with
// microseconds and a "+00:00" offset, read back with any fraction, a "Z"
// or a numeric offset, or no zone at all (taken as UTC).
package isotime

import (
	"fmt"
	"time"
)

// layout is Python's isoformat(timespec='microseconds') of an aware UTC time.
const layout = "2006-01-02T15:04:05.000000-07:00"

// Format renders a time the way Kopf stores it.
func Format(t time.Time) string { return t.UTC().Format(layout) }

// Parse reads a timestamp written by Kopf, by kopf-go, or by hand.
func Parse(s string) (time.Time, error) {
	for _, l := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999"} {
		if t, err := time.Parse(l, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("parse timestamp %q: not an ISO 8601 date-time", s)
}
