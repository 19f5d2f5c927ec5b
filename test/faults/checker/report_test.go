package checker

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// Overlaps of one object and two actors close in time print as one
// episode; others apart.
func TestEpisodes(t *testing.T) {
	o := func(object, a, b string, from, to int64) Overlap {
		return Overlap{Object: object, A: a, B: b, Interval: Interval{ms(from), ms(to)}}
	}
	overlaps := []Overlap{
		o("ns/o", "a/1", "b/2", 0, 100),
		o("ns/o", "a/1", "b/2", 1000, 1500),
		o("ns/p", "a/1", "b/2", 1200, 1300),
		o("ns/o", "a/1", "b/2", 9000, 9100), // more than episodeGap later
		o("ns/o", "a/1", "c/3", 1000, 1100),
	}
	type ep struct {
		Object, A, B string
		From, To     int64
		Stretches    int
		Together     time.Duration
	}
	var got []ep
	for _, e := range episodes(overlaps) {
		got = append(got, ep{e.Object, e.A, e.B, e.From / int64(time.Millisecond), e.To / int64(time.Millisecond), e.stretches, e.together})
	}
	want := []ep{
		{"ns/o", "a/1", "b/2", 0, 1500, 2, 600 * time.Millisecond},
		{"ns/o", "a/1", "c/3", 1000, 1100, 1, 100 * time.Millisecond},
		{"ns/p", "a/1", "b/2", 1200, 1300, 1, 100 * time.Millisecond},
		{"ns/o", "a/1", "b/2", 9000, 9100, 1, 100 * time.Millisecond},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("episodes -want +got:\n%s", diff)
	}
	text := Report{Overlaps: overlaps}.Text()
	if !strings.Contains(text, "overlaps: 5 stretches in 4 episodes\n") ||
		!strings.Contains(text, "OVERLAP ns/o: a/1 and b/2 both active from +0.000s to +1.500s (1.50 s; 2 stretches, together 600 ms)\n") {
		t.Errorf("the text:\n%s", text)
	}
}
