package posting

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestShorten(t *testing.T) {
	short := strings.Repeat("a", MaxMessageLength)
	if got := Shorten(short); got != short {
		t.Errorf("a message of the maximal length was changed")
	}
	long := strings.Repeat("b", 600) + strings.Repeat("c", 600)
	got := Shorten(long)
	if utf8.RuneCountInString(got) != MaxMessageLength {
		t.Errorf("Shorten() gave %d characters, want %d", utf8.RuneCountInString(got), MaxMessageLength)
	}
	if !strings.HasPrefix(got, "bbb") || !strings.HasSuffix(got, "ccc") || !strings.Contains(got, "b...c") {
		t.Errorf("Shorten() = %q..., want both ends kept and ... in the middle", got[:20])
	}
	multibyte := strings.Repeat("é", 2000)
	if got := Shorten(multibyte); !utf8.ValidString(got) || utf8.RuneCountInString(got) != MaxMessageLength {
		t.Errorf("Shorten() broke multi-byte characters or the length")
	}
}
