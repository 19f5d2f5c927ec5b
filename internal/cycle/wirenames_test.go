package cycle

import "testing"

// The wire names are read by users, tools and Python Kopf: renaming one
// breaks them, so they are pinned here.
func TestWireNames(t *testing.T) {
	for got, want := range map[string]string{
		ReasonInvalidProgress:  "InvalidProgress",
		ReasonInvalidDiffBase:  "InvalidLastHandledConfiguration",
		ReasonDiffBaseTooLarge: "LastHandledConfigurationTooLarge",
	} {
		if got != want {
			t.Errorf("wire name %q changed; want %q", got, want)
		}
	}
}
