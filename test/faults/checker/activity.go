package checker

import (
	"sort"

	"github.com/kopf-go/kopf/test/faults/activity"
	"github.com/kopf-go/kopf/test/faults/faultlog"
)

// Interval is a stretch of time in UnixNano, both ends included.
type Interval struct{ From, To int64 }

// run is one handler or daemon call, as its records show it.
type run struct {
	actor, object, uid, what string
	number                   int64 // the run's number, as the results name it
	from, to                 int64 // its start, and its end or last record
	done                     bool  // it ended with its work complete
	times                    []int64
}

// runs pairs the records of each run. A run whose end is missing (its
// process was killed, or exited) lasts until its last record.
func runs(records []activity.Record) []*run {
	type key struct {
		actor string
		run   int64
	}
	byKey := map[key]*run{}
	var out []*run
	for _, r := range records {
		k := key{r.Actor, r.Run}
		x := byKey[k]
		if x == nil {
			x = &run{actor: r.Actor, number: r.Run, object: r.Object, uid: r.UID, what: r.What, from: r.At, to: r.At}
			byKey[k] = x
			out = append(out, x)
		}
		x.from, x.to = min(x.from, r.At), max(x.to, r.At)
		x.times = append(x.times, r.At)
		if r.Event == activity.End && r.Done {
			x.done = true
		}
	}
	for _, x := range out {
		sort.Slice(x.times, func(i, j int) bool { return x.times[i] < x.times[j] })
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].from < out[j].from })
	return out
}

// pause is one SIGSTOP..SIGCONT of an actor.
type pause struct{ stop, cont int64 }

// pauses are the actors' pauses from the fault log; one still on lasts
// until the end.
func pauses(faults []faultlog.Entry, until int64) map[string][]pause {
	out := map[string][]pause{}
	for _, f := range faults {
		if f.Kind == faultlog.Pause && f.Actor != "" {
			s, e := f.Span(until)
			out[f.Actor] = append(out[f.Actor], pause{s, e})
		}
	}
	for _, ps := range out {
		sort.Slice(ps, func(i, j int) bool { return ps[i].stop < ps[j].stop })
	}
	return out
}

// resumed is a run's stretch in the first instant after a SIGCONT.
type resumed struct {
	actor, object string
	cont          int64
	span          Interval
	times         []int64
	// last is the run's last record: how long it went on after the
	// SIGCONT, in the window or past it.
	last int64
}

// split cuts a run at its actor's pauses: a paused actor does nothing.
// What the run did in the first instant after each SIGCONT (up to
// AfterResumeWindow), whether it began before the pause or right after
// it, is set apart as resumed activity; the rest is the run's activity.
func split(x *run, ps []pause) (active []Interval, after []resumed) {
	segs := []Interval{{x.from, x.to}}
	for _, p := range ps {
		window := Interval{p.cont, p.cont + int64(AfterResumeWindow)}
		var next []Interval
		for _, s := range segs {
			if s.To <= p.stop || s.From > window.To {
				next = append(next, s)
				continue
			}
			if s.From < p.stop {
				// A record stamped in the pause came as it began: the
				// process was stopped from the suite's stamp on.
				next = append(next, Interval{s.From, p.stop})
			}
			if s.To >= p.cont {
				in := Interval{max(s.From, p.cont), min(s.To, window.To)}
				after = append(after, resumed{actor: x.actor, object: x.object, cont: p.cont, span: in,
					times: within(x.times, in), last: x.to})
			}
			if s.To > window.To {
				next = append(next, Interval{max(s.From, window.To), s.To})
			}
		}
		segs = next
	}
	return segs, after
}

// within are the times inside the interval.
func within(times []int64, in Interval) []int64 {
	var out []int64
	for _, t := range times {
		if t >= in.From && t <= in.To {
			out = append(out, t)
		}
	}
	return out
}

// union merges intervals that touch or overlap.
func union(in []Interval) []Interval {
	if len(in) == 0 {
		return nil
	}
	s := append([]Interval(nil), in...)
	sort.Slice(s, func(i, j int) bool { return s[i].From < s[j].From })
	out := []Interval{s[0]}
	for _, x := range s[1:] {
		last := &out[len(out)-1]
		if x.From <= last.To {
			last.To = max(last.To, x.To)
			continue
		}
		out = append(out, x)
	}
	return out
}

// intersect returns the stretches where both unions hold, of positive
// length: two actors active on one object at the same moment.
func intersect(a, b []Interval) []Interval {
	var out []Interval
	for i, j := 0, 0; i < len(a) && j < len(b); {
		from, to := max(a[i].From, b[j].From), min(a[i].To, b[j].To)
		if from < to {
			out = append(out, Interval{from, to})
		}
		if a[i].To < b[j].To {
			i++
		} else {
			j++
		}
	}
	return out
}
