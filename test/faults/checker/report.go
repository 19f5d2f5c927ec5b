package checker

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/kopf-go/kopf/test/faults/faultlog"
)

// Text is the report for people: every overlap with its object, actors,
// moments and the faults around it; the activity after resumes; each
// fault's takeover; the duplicates; and the figures per kind. Moments
// are relative to the report's origin.
func (r Report) Text() string {
	var b strings.Builder
	eps := episodes(r.Overlaps)
	fmt.Fprintf(&b, "overlaps: %d stretches in %d episodes\n", len(r.Overlaps), len(eps))
	for _, e := range eps {
		fmt.Fprintf(&b, "  OVERLAP %s: %s and %s both active from %s to %s (%s", e.Object, e.A, e.B,
			r.at(e.From), r.at(e.To), human(time.Duration(e.To-e.From)))
		if e.stretches > 1 {
			fmt.Fprintf(&b, "; %d stretches, together %s", e.stretches, human(e.together))
		}
		b.WriteString(")\n")
		if e.Cause.Kind != "" {
			fmt.Fprintf(&b, "    cause: %s\n", r.Entry(e.Cause))
		}
		for _, f := range e.Around {
			if f.ID != e.Cause.ID {
				fmt.Fprintf(&b, "    around: %s\n", r.Entry(f))
			}
		}
	}
	fmt.Fprintf(&b, "after-resume activity (window %s after SIGCONT):", human(AfterResumeWindow))
	if len(r.AfterResume) == 0 {
		b.WriteString(" none\n")
	} else {
		b.WriteString("\n")
	}
	var maxSeen time.Duration
	for _, a := range r.AfterResume {
		maxSeen = max(maxSeen, a.MaxDelay)
		fmt.Fprintf(&b, "  after-resume activity: %d records, up to %s after SIGCONT (%s at %s, on %s)",
			a.Records, human(a.MaxDelay), a.Actor, r.at(a.Cont), strings.Join(a.Objects, ", "))
		if a.Last > AfterResumeWindow {
			fmt.Fprintf(&b, "; active on until %s after SIGCONT, which the overlaps show", human(a.Last))
		}
		b.WriteString("\n")
	}
	if len(r.AfterResume) > 0 {
		fmt.Fprintf(&b, "  after-resume activity: the most seen is %s after SIGCONT\n", human(maxSeen))
	}
	b.WriteString("takeovers:\n")
	for _, t := range r.Takeovers {
		fmt.Fprintf(&b, "  %s: %d objects, %d moved", r.Entry(t.Fault), t.Objects, t.Moved)
		if t.Later > 0 {
			fmt.Fprintf(&b, ", %d moved after a later fault on the victim", t.Later)
		}
		if t.Gone > 0 {
			fmt.Fprintf(&b, ", %d deleted first", t.Gone)
		}
		if t.Moved > 0 {
			gaps := make([]time.Duration, 0, len(t.Gaps))
			for _, g := range t.Gaps {
				gaps = append(gaps, g.Gap)
			}
			fmt.Fprintf(&b, ", first after %s, last after %s; gaps %s", human(t.First), human(t.All), distribution(gaps))
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "duplicate creates: %d\n", len(r.Duplicates))
	for _, d := range r.Duplicates {
		ends := make([]string, len(d.Ends))
		for i, e := range d.Ends {
			ends[i] = d.Actors[i] + " at " + r.at(e)
		}
		kind := d.Kind
		if kind == "" {
			kind = "no fault of the first actor"
		}
		fmt.Fprintf(&b, "  %s (%s): completed by %s (%s)\n", d.Object, d.UID, strings.Join(ends, ", "), kind)
	}
	fmt.Fprintf(&b, "late writes: %d (of %d new results judged; %d versions after a gap of the watcher not judged)\n",
		len(r.LateWrites), r.Judged, r.Unjudged)
	for _, l := range r.LateWrites {
		holder := l.GrantHolder
		if holder == "" {
			holder = "no member seen"
		}
		fmt.Fprintf(&b, "  LATE WRITE %s (%s) at %s: the %s result of %s landed as version %s on a version granted to %q (%s)\n",
			l.Object, l.UID, r.at(l.At), l.Handler, l.Writer, l.RV, l.Grant, holder)
	}
	b.WriteString(r.Markdown())
	return b.String()
}

// episodeGap joins the overlaps of two actors on one object that follow
// each other this closely into one episode for printing: a daemon and a
// handler that take turns make many short stretches of one story.
const episodeGap = 5 * time.Second

// episode is overlaps of one object and two actors close in time.
type episode struct {
	Overlap
	stretches int
	together  time.Duration
}

// episodes groups the overlaps, in the order of their starts.
func episodes(overlaps []Overlap) []episode {
	s := slices.Clone(overlaps)
	sort.SliceStable(s, func(i, j int) bool {
		if s[i].Object != s[j].Object {
			return s[i].Object < s[j].Object
		}
		if s[i].A != s[j].A {
			return s[i].A < s[j].A
		}
		if s[i].B != s[j].B {
			return s[i].B < s[j].B
		}
		return s[i].From < s[j].From
	})
	var out []episode
	for _, o := range s {
		if n := len(out); n > 0 {
			last := &out[n-1]
			if last.Object == o.Object && last.A == o.A && last.B == o.B && o.From-last.To < int64(episodeGap) {
				last.To = max(last.To, o.To)
				last.stretches++
				last.together += time.Duration(o.To - o.From)
				for _, f := range o.Around {
					if !slices.ContainsFunc(last.Around, func(g faultlog.Entry) bool { return g.ID == f.ID }) {
						last.Around = append(last.Around, f)
					}
				}
				continue
			}
		}
		o.Around = slices.Clone(o.Around)
		out = append(out, episode{Overlap: o, stretches: 1, together: time.Duration(o.To - o.From)})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].From < out[j].From })
	return out
}

// Markdown is the table of figures per kind of fault, ready for docs.
func (r Report) Markdown() string {
	var b strings.Builder
	b.WriteString("| fault | faults | takeover min / median / max | gap old → new owner min / median / p95 / max | negative gaps | none moved | duplicate creates | overlaps |\n")
	b.WriteString("|---|---:|---|---|---:|---:|---:|---:|\n")
	for _, k := range r.Kinds {
		kind := k.Kind
		if kind == "" {
			kind = "(no fault of theirs)"
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %d | %d | %d | %d |\n", kind, k.Faults,
			triple(k.Takeover), k.Gap, k.Negative, k.Stuck, k.Duplicates, k.Overlaps)
	}
	return b.String()
}

// String is min / median / p95 / max (n).
func (d Distribution) String() string {
	if d.N == 0 {
		return "–"
	}
	return fmt.Sprintf("%s / %s / %s / %s (n=%d)", human(d.Min), human(d.Median), human(d.P95), human(d.Max), d.N)
}

// triple is min / median / max (n).
func triple(d Distribution) string {
	if d.N == 0 {
		return "–"
	}
	return fmt.Sprintf("%s / %s / %s (n=%d)", human(d.Min), human(d.Median), human(d.Max), d.N)
}

// Entry describes a fault or process event.
func (r Report) Entry(f faultlog.Entry) string {
	s := fmt.Sprintf("#%d %s", f.ID, f.Kind)
	if f.Replica != "" {
		s += " " + f.Replica
	}
	if f.Actor != "" {
		s += " (" + f.Actor + ")"
	}
	if f.Object != "" {
		s += " on " + f.Object
	}
	switch {
	case f.End == 0:
		s += " from " + r.at(f.Start) + " on"
	case f.End == f.Start:
		s += " at " + r.at(f.Start)
	default:
		s += " " + r.at(f.Start) + ".." + r.at(f.End)
	}
	if f.Note != "" {
		s += ": " + f.Note
	}
	return s
}

// at is a moment relative to the origin.
func (r Report) at(t int64) string {
	return fmt.Sprintf("+%.3fs", time.Duration(t-r.Origin).Seconds())
}

// human rounds a duration for reading: milliseconds below a second.
func human(d time.Duration) string {
	if d > -time.Second && d < time.Second {
		return fmt.Sprintf("%d ms", d.Milliseconds())
	}
	return fmt.Sprintf("%.2f s", d.Seconds())
}
